"""The elastic API (docs/elastic.md) within one mpirun job at 1 and 2 ranks: states,
run() and the Keras callbacks; the elastic launcher itself is tested in tests/cluster."""

import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("tensorflow")

from mpijob import REPO, assert_passed, build_op_library, job_env, mpirun  # noqa: E402

JOB = Path(__file__).resolve().parent / "jobs" / "elastic_job.py"


@pytest.fixture(scope="session", autouse=True)
def op_library():
    build_op_library()


@pytest.mark.parametrize("ranks,keras", [(1, "keras3"), (2, "keras3"), (2, "tf_keras")])
def test_elastic_api_in_one_job(ranks, keras):
    env = {"TF_USE_LEGACY_KERAS": "1" if keras == "tf_keras" else "0"}
    assert_passed(mpirun(ranks, [JOB], 240, env=env), ranks)


def test_example_under_the_elastic_launcher():
    """examples/elastic_keras.py end to end under mpirep-run's elastic driver on this machine."""
    command = ["timeout", "-k", "10", "240", sys.executable, "-m", "mpirep.launch",
               "--min-np", "2", "-H", "localhost:2", sys.executable,
               str(REPO / "examples" / "elastic_keras.py"), "--epochs", "2", "--samples", "1024"]
    done = subprocess.run(command, cwd=REPO, env=job_env(), text=True,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=270)
    assert done.returncode == 0, done.stdout[-6000:]
    assert "mpirep-run: generation 0: 2 ranks on localhost:2" in done.stdout
    assert "final epoch 2 on 2 ranks" in done.stdout, done.stdout[-3000:]
