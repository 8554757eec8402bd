"""The Replicator end to end: each test starts one mpirun job that runs many checks."""

import re
import sys
from pathlib import Path

import pytest

pytest.importorskip("tensorflow")

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tf"))
from mpijobs import (  # noqa: E402
    REPO, assert_passed, build_op_library, keras_cases, keras_env, mpirun)

JOBS = Path(__file__).resolve().parent / "jobs"


@pytest.fixture(scope="session", autouse=True)
def op_library():
    build_op_library()


@pytest.mark.parametrize("ranks", [1, 2, 3])
def test_collectives_variables_input_checkpoints(ranks):
    assert_passed(*mpirun(ranks, JOBS / "collectives_job.py", timeout_s=180), ranks)


@pytest.mark.parametrize("ranks,keras", keras_cases([(1, "keras3"), (2, "keras3"), (3, "keras3"),
                                                     (2, "tf_keras")]))
def test_training_matches_one_process(ranks, keras):
    assert_passed(*mpirun(ranks, JOBS / "equivalence_job.py", env=keras_env(keras), timeout_s=180),
                  ranks)


@pytest.mark.parametrize("script", ["replicator_classifier.py", "replicator_gan.py",
                                    "replicator_custom_update.py"])
def test_example_at_two_ranks(script):
    status, output = mpirun(2, REPO / "examples" / script, timeout_s=180)
    assert status == 0, output[-6000:]
    assert len(re.findall(r"^final ", output, re.M)) == 1, output[-3000:]  # the chief only
