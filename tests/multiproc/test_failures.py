"""A mismatch nobody catches must end the job by itself, non-zero, naming the tensor.
(Jobs in which one rank raises, exits or is killed, under each launcher: tests/cluster.)"""
from mpijob import mpirun

BOUND_S = 60


def test_uncaught_mismatch_ends_the_job():
    job = mpirun(3, ["tests/multiproc/jobs/uncaught_mismatch.py"], BOUND_S)
    print(job.output[-3000:])
    assert not job.timed_out, f"the job hung until killed after {BOUND_S} s"
    assert job.returncode != 0
    assert "MismatchError" in job.output
    assert "grads/dense_kernel" in job.output
