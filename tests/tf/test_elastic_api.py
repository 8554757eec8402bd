"""The elastic API (docs/elastic.md) within one mpirun job at 1, 2 and 3 ranks: states,
run() and the Keras callbacks; the elastic launcher itself is tested in tests/cluster."""

from pathlib import Path

import pytest

pytest.importorskip("tensorflow")

from mpijobs import assert_passed, build_op_library, mpirun  # noqa: E402

JOB = Path(__file__).resolve().parent / "jobs" / "elastic_job.py"


@pytest.fixture(scope="session", autouse=True)
def op_library():
    build_op_library()


@pytest.mark.parametrize("ranks,keras", [(1, "keras3"), (2, "keras3"), (3, "keras3"),
                                         (2, "tf_keras")])
def test_elastic_api_in_one_job(ranks, keras):
    env = {"TF_USE_LEGACY_KERAS": "1" if keras == "tf_keras" else "0"}
    assert_passed(*mpirun(ranks, JOB, env=env, timeout_s=240), ranks)
