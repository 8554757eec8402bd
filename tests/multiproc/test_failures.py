"""Jobs in which a rank fails must end by themselves, non-zero, within a bound, naming it."""
import re

import pytest

from mpijob import mpirun

BOUND_S = 60
RANK_ONE = re.compile(r"rank 1\b|\[\[\d+,\d+\],1\]")  # mpirep's words or Open MPI's process name


@pytest.mark.parametrize("mode", ["raise", "exit", "exit0", "kill"])
def test_job_ends_when_one_rank_fails(mode):
    job = mpirun(3, ["tests/multiproc/jobs/one_rank_fails.py", mode], BOUND_S)
    print(job.output[-3000:])
    assert not job.timed_out, f"{mode}: the job hung until killed after {BOUND_S} s"
    assert job.returncode != 0
    assert RANK_ONE.search(job.output), "the failing rank is not named"
    if mode == "raise":
        assert "this rank raised before its allreduce" in job.output


def test_uncaught_mismatch_ends_the_job():
    job = mpirun(3, ["tests/multiproc/jobs/uncaught_mismatch.py"], BOUND_S)
    print(job.output[-3000:])
    assert not job.timed_out, f"the job hung until killed after {BOUND_S} s"
    assert job.returncode != 0
    assert "MismatchError" in job.output
    assert "grads/dense_kernel" in job.output
