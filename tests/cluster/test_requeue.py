"""A Keras job under the requeueable sbatch template (launch/slurm/preemptible-srun.sbatch) on
the single-node Slurm cluster: SIGUSR1 to its steps mid-epoch, and the job saves, requeues
itself and, started again by Slurm, resumes to the end: every batch trained exactly once, the
weights bit-identical to an uninterrupted run's (docs/preemption.md)."""
import os
import re
import time

import numpy as np
import pytest

from cluster_jobs import HERE, PY, REPO, job_state, run, wait_job

pytestmark = pytest.mark.slurm1

TEMPLATE = REPO / "launch" / "slurm" / "preemptible-srun.sbatch"
EPOCHS, BATCHES = 2, 10
PAUSE_AT = (0, 3)


def wait_for(path, jobid, env, timeout=180):
    give_up_at = time.monotonic() + timeout
    while not path.exists():
        state, info = job_state(jobid, env)
        assert state is None, f"the job ended before {path.name}: {info}"
        assert time.monotonic() < give_up_at, f"no {path} after {timeout} s"
        time.sleep(0.2)


def test_a_signalled_job_requeues_itself_and_resumes(tmp_path):
    env = {"SLURM_CONF": os.environ["MPIREP_SLURM_CONF"], "TF_CPP_MIN_LOG_LEVEL": "3"}
    out = tmp_path / "job.out"
    submitted = run(["sbatch", "--parsable", "-N", "1", "--ntasks-per-node=2", "--time=10",
                     "-o", str(out), "-D", str(tmp_path), str(TEMPLATE), PY,
                     str(HERE / "preemption_job.py"), str(tmp_path),
                     ",".join(map(str, PAUSE_AT))], env)
    jobid = submitted.stdout.strip().split(";")[0]
    wait_for(tmp_path / "paused", jobid, env)
    run(["scancel", "--signal=USR1", jobid], env, timeout=30)
    # Slurm makes a requeued job wait about two minutes (BeginTime) before it may start again;
    # the test lets it start at once.
    give_up_at = time.monotonic() + 120
    while True:
        state, info = job_state(jobid, env)
        if re.search(r"JobState=PENDING .*\bRestarts=1\b", info):
            break
        assert state in (None, "REQUEUED") and time.monotonic() < give_up_at, \
            f"not requeued: {info}\n{out.read_text()}"
        time.sleep(0.2)
    run(["scontrol", "update", f"JobId={jobid}", "StartTime=now"], env, timeout=30)
    state, info = wait_job(jobid, env, timeout=240)
    log = out.read_text()
    assert state == "COMPLETED" and re.search(r"\bRestarts=1\b", info), f"{info}\n{log}"
    assert f"requeued Slurm job {jobid}" in log and "start 1: training complete" in log, log
    assert "start 0: training complete" not in log, log
    stop = PAUSE_AT[0] * BATCHES + PAUSE_AT[1] + 1
    everything = [(e, b) for e in range(EPOCHS) for b in range(BATCHES)]
    for rank in (0, 1):
        trained = [tuple(map(int, line.split()))
                   for line in (tmp_path / f"trained.{rank}").read_text().splitlines()]
        assert trained == [(0, e, b) for e, b in everything[:stop]] + \
            [(1, e, b) for e, b in everything[stop:]], (rank, trained)
    final = np.load(tmp_path / "1.npz")
    assert final["resumed"].tobytes() == final["plain"].tobytes()
    assert not (tmp_path / "backup").exists()   # deleted on completion
