"""The Replicator end to end: each test starts one mpirun job that runs many checks."""

import re

import pytest

pytest.importorskip("tensorflow")

from keras_versions import keras_cases, keras_env  # noqa: E402
from mpijob import REPO, assert_passed, build_op_library, mpirun  # noqa: E402

JOBS = REPO / "tests" / "replicator" / "jobs"
HARNESS = REPO / "tests" / "tf" / "jobs"  # the jobs' check runner


@pytest.fixture(scope="session", autouse=True)
def op_library():
    build_op_library()


@pytest.mark.parametrize("ranks", [1, 2, 3])
def test_collectives_variables_input_checkpoints(ranks):
    assert_passed(mpirun(ranks, [JOBS / "collectives_job.py"], 180, pythonpath=[HARNESS]), ranks)


@pytest.mark.parametrize("ranks,keras", keras_cases([(1, "keras3"), (2, "keras3"), (3, "keras3"),
                                                     (2, "tf_keras")]))
def test_training_matches_one_process(ranks, keras):
    assert_passed(mpirun(ranks, [JOBS / "equivalence_job.py"], 180, env=keras_env(keras),
                         pythonpath=[HARNESS]), ranks)


@pytest.mark.parametrize("script", ["replicator_classifier.py", "replicator_gan.py",
                                    "replicator_custom_update.py"])
def test_example_at_two_ranks(script):
    job = mpirun(2, [REPO / "examples" / script], 180)
    assert job.returncode == 0, job.output[-6000:]
    assert len(re.findall(r"^final ", job.output, re.M)) == 1, job.output[-3000:]  # the chief only
