"""BackupAndRestore and PreemptionCheckpointHandler end to end (tests/tf/jobs/preemption_job.py):
a signal to one rank mid-epoch, the agreed stop, the backup, and the resumed run's weights."""

import pytest

pytest.importorskip("tensorflow")

from keras_versions import keras_cases, keras_env  # noqa: E402
from mpijob import REPO, assert_passed, build_op_library, mpirun  # noqa: E402


@pytest.fixture(scope="module", autouse=True)
def op_library():
    build_op_library()


@pytest.mark.parametrize("ranks,keras", keras_cases([(2, "keras3"), (2, "tf_keras")]))
def test_signal_save_and_resume(ranks, keras, tmp_path):
    job = mpirun(ranks, [REPO / "tests" / "tf" / "jobs" / "preemption_job.py", tmp_path], 300,
                 env=keras_env(keras))
    assert_passed(job, ranks)
    # rank 0 alone says how to resume, once per stop: with DistributedOptimizer and, under
    # Keras 3 (or Keras 2), with ZeroRedundancyOptimizer and with both accumulations (one)
    stops = 1 if keras == "tf_keras" else 4 if keras == "keras3" else 3
    assert job.output.count("mpirep: preemption signal: saved epoch 1, 4 batches done") == stops
