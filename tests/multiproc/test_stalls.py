"""The stall inspector: a warning that names the late tensor and rank, and the stall shutdown."""
from mpijob import mpirun


def test_late_rank_is_reported_and_the_job_completes():
    job = mpirun(3, ["tests/multiproc/jobs/late_rank.py", "warn", "3"], 60)
    print(job.output[-3000:])
    assert job.returncode == 0
    warnings = [line for line in job.output.splitlines() if "stalled collective" in line]
    assert warnings, "no stall warning"
    assert all("late_tensor" in line and "missing rank 1" in line for line in warnings), warnings


def test_stall_shutdown_aborts_the_job():
    job = mpirun(3, ["tests/multiproc/jobs/late_rank.py", "never"], 60)
    print(job.output[-3000:])
    assert not job.timed_out, "the stall shutdown did not end the job"
    assert job.returncode != 0
    assert "stall shutdown time" in job.output
    assert "late_tensor" in job.output
