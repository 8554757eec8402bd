"""The shared-memory allreduce in real jobs (tests/multiproc/jobs/shm_allreduce_job.py), 1 to 4
ranks on this host: closed-form values for every dtype and op, alone and fused, identical on
every rank, through shared memory by default (rank 0's timeline names the path; a rank alone has
no one to share with and runs the ring), again with 4 KiB slots so that tensors and fused
groups span several, and the ring with shm_allreduce off. A rank SIGKILLed
mid-allreduce ends the job promptly, the launcher naming it, and leaves no segment in /dev/shm."""
import re
from pathlib import Path

import pytest

import trace_events
from mpijob import mpirun

JOB = "tests/multiproc/jobs/shm_allreduce_job.py"
TIMEOUT_S = 120


def transfers(path):
    return {span["name"] for span in trace_events.load(path) if span.get("ph") == "X"} - {"NEGOTIATE", "QUEUE", "UNPACK", "PACK"}


@pytest.mark.parametrize("ranks", [1, 2, 3, 4])
def test_values_on_every_rank_through_shared_memory(ranks, tmp_path):
    job = mpirun(ranks, [JOB, "values", tmp_path], TIMEOUT_S)
    print(job.output[-3000:])
    assert not job.timed_out, "the job hung"
    assert job.returncode == 0
    assert job.output.count("shm values ok") == ranks
    assert transfers(tmp_path / "shm.json") == {"SHM_ALLREDUCE" if ranks > 1 else "RING_ALLREDUCE"}
    assert transfers(tmp_path / "ring.json") == {"RING_ALLREDUCE"}


def test_rank_killed_mid_allreduce_ends_the_job_and_leaves_no_segment(tmp_path):
    job = mpirun(3, [JOB, "killed", tmp_path], TIMEOUT_S)
    print(job.output[-3000:])
    assert not job.timed_out, "the job hung after rank 1 was killed"
    assert job.returncode != 0
    assert re.search(r"rank 1 with PID \d+ .*signal 9", job.output), "the launcher should name rank 1"
    pids = [Path(tmp_path / f"pid.{r}").read_text() for r in range(3)]
    left = [p.name for p in Path("/dev/shm").iterdir() if any(p.name.startswith(f"mpirep-{pid}-") for pid in pids)]
    assert not left, f"segments left in /dev/shm: {left}"
