"""Buffers over 2 GiB: counts are 64-bit in the core and messages are cut below MPI's limit."""
from mpijob import mpirun


def test_allreduce_and_broadcast_past_2_gib():
    job = mpirun(2, ["tests/multiproc/jobs/large_buffers.py"], 240)
    print(job.output[-3000:])
    assert not job.timed_out, "the job hung"
    assert job.returncode == 0
    assert job.output.count("large buffers ok") == 2
