"""Jobs under the requeueable sbatch template (launch/slurm/preemptible-srun.sbatch) on the real
Slurm clusters, stopped mid-epoch by a preemption signal (tests/cluster/preemption_job.py): the
ranks stop after one agreed batch, rank 0 saves, and the job requeues itself or, without
--requeue, exits with the resume hint; the job started again resumes to the end with every
batch trained exactly once and weights bit-identical to an uninterrupted run's
(docs/preemption.md)."""
import os
import re
import signal
import time

import numpy as np
import pytest

from cluster_jobs import HERE, ON_NET, PY, REPO, job_state, run, wait_job

TEMPLATE = REPO / "launch" / "slurm" / "preemptible-srun.sbatch"
EPOCHS, BATCHES = 2, 10
RANKS = 2
CLUSTERS = {"slurm1": ("MPIREP_SLURM_CONF", {}), "slurm2": ("MPIREP_SLURM2_CONF", ON_NET)}


def slurm_env(cluster):
    conf, extra = CLUSTERS[cluster]
    return {"SLURM_CONF": os.environ[conf], "TF_CPP_MIN_LOG_LEVEL": "3", **extra}


def submit(tmp_path, env, job_args, nodes=1, sbatch_options=()):
    """Submits the job script, RANKS tasks over ``nodes`` nodes; returns the job id."""
    submitted = run(["sbatch", "--parsable", "-N", str(nodes),
                     f"--ntasks-per-node={RANKS // nodes}", "--time=10", *sbatch_options,
                     "-o", str(tmp_path / "job.out"), "-D", str(tmp_path), str(TEMPLATE), PY,
                     str(HERE / "preemption_job.py"), str(tmp_path), *job_args], env)
    return submitted.stdout.strip().split(";")[0]


def wait_for(paths, jobid, env, timeout=180):
    give_up_at = time.monotonic() + timeout
    while not all(path.exists() for path in paths):
        state, info = job_state(jobid, env)
        assert state is None, f"the job ended before {paths}: {info}"
        assert time.monotonic() < give_up_at, f"not all of {paths} after {timeout} s"
        time.sleep(0.2)


def paused(tmp_path, jobid, env, ranks=range(RANKS)):
    """Waits until ``ranks`` wait for their signal at the pause; returns their pids."""
    files = [tmp_path / f"paused.{rank}" for rank in ranks]
    wait_for(files, jobid, env)
    return [int(file.read_text()) for file in files]


def signal_steps(jobid, env):
    run(["scancel", "--signal=USR1", jobid], env, timeout=30)


def complete_after_requeue(tmp_path, jobid, env):
    """Waits for the job to requeue itself, lets it start again at once (Slurm would hold it
    about two minutes: BeginTime) and waits for it to complete; returns its output."""
    give_up_at = time.monotonic() + 120
    while True:
        state, info = job_state(jobid, env)
        if re.search(r"JobState=PENDING .*\bRestarts=1\b", info):
            break
        assert state in (None, "REQUEUED") and time.monotonic() < give_up_at, \
            f"not requeued: {info}\n{(tmp_path / 'job.out').read_text()}"
        time.sleep(0.2)
    # The nodes refuse a start whose job credential is from the second in which the job's
    # previous credential was revoked, at the requeue ("Job credential revoked"): the start
    # falls in a later second.
    time.sleep(max(0.0, int(time.time()) + 2 - time.time()))
    run(["scontrol", "update", f"JobId={jobid}", "StartTime=now"], env, timeout=30)
    state, info = wait_job(jobid, env, timeout=240)
    log = (tmp_path / "job.out").read_text()
    assert state == "COMPLETED" and re.search(r"\bRestarts=1\b", info), f"{info}\n{log}"
    assert f"requeued Slurm job {jobid}" in log, log
    return log


def check_resumed(tmp_path, log, stop_at):
    """Every batch trained once over the two starts, on every rank, the first start's last
    being ``stop_at`` (epoch, batch), and final weights equal to an uninterrupted run's."""
    assert "start 1: training complete" in log and "start 0: training complete" not in log, log
    stop = stop_at[0] * BATCHES + stop_at[1] + 1
    everything = [(e, b) for e in range(EPOCHS) for b in range(BATCHES)]
    for rank in range(RANKS):
        trained = [tuple(map(int, line.split()))
                   for line in (tmp_path / f"trained.{rank}").read_text().splitlines()]
        assert trained == [(0, e, b) for e, b in everything[:stop]] + \
            [(1, e, b) for e, b in everything[stop:]], (rank, trained)
    final = np.load(tmp_path / "1.npz")
    assert final["resumed"].tobytes() == final["plain"].tobytes()


def saves(tmp_path, start, file):
    lines = (tmp_path / "saves").read_text().splitlines()
    return lines.count(f"{start} {file}")


# Model.fit on one node is test_one_rank_signalled_then_every_rank_during_the_save, which checks
# all this too: one job less in the cluster suite's time.
@pytest.mark.parametrize("mode,cluster", [
    pytest.param("fit", "slurm2", marks=pytest.mark.slurm2),     # one rank on each node
    pytest.param("loop", "slurm1", marks=pytest.mark.slurm1)])
def test_a_signalled_job_requeues_itself_and_resumes(tmp_path, mode, cluster):
    env, stop_at = slurm_env(cluster), (0, 3)
    jobid = submit(tmp_path, env, [mode, "0,3"], nodes=2 if cluster == "slurm2" else 1)
    paused(tmp_path, jobid, env)
    signal_steps(jobid, env)
    check_resumed(tmp_path, complete_after_requeue(tmp_path, jobid, env), stop_at)
    if mode == "fit":
        assert not (tmp_path / "backup").exists()   # deleted on completion


@pytest.mark.slurm1
def test_one_rank_signalled_then_every_rank_during_the_save(tmp_path):
    """SIGUSR1 to rank 1's process alone stops both ranks after the same batch; rank 0 saves
    once, and its save, held open before the rename, is hit by a second signal to every task:
    the backup on disk stays the previous, whole one until the save completes."""
    env, stop_at = slurm_env("slurm1"), (1, 3)
    jobid = submit(tmp_path, env, ["fit", "1,3", "--signalled", "1", "--hold-save"])
    (pid,) = paused(tmp_path, jobid, env, ranks=[1])
    os.kill(pid, signal.SIGUSR1)
    wait_for([tmp_path / "saving"], jobid, env)
    with np.load(tmp_path / "backup" / "backup.npz") as old:   # the backup of epoch 0's end
        assert (int(old["epoch"]), int(old["batch"])) == (1, 0)
    with np.load((tmp_path / "saving").read_text()) as new:      # whole, not yet in place
        assert (int(new["epoch"]), int(new["batch"])) == (1, 4)
    signal_steps(jobid, env)
    log = complete_after_requeue(tmp_path, jobid, env)
    check_resumed(tmp_path, log, stop_at)
    assert saves(tmp_path, 0, "backup/backup.npz") == 2, (tmp_path / "saves").read_text()
    assert log.count("mpirep: preemption signal: saved") == 1, log


@pytest.mark.slurm1
def test_without_requeue_the_job_exits_with_the_hint_and_a_new_one_resumes(tmp_path):
    env, stop_at = slurm_env("slurm1"), (0, 3)
    backup = tmp_path / "backup" / "backup.npz"
    jobid = submit(tmp_path, env, ["fit", "0,3"], sbatch_options=["--no-requeue"])
    paused(tmp_path, jobid, env)
    signal_steps(jobid, env)
    state, info = wait_job(jobid, env, timeout=120)
    log = (tmp_path / "job.out").read_text()
    assert state == "FAILED" and "ExitCode=75:0" in info and "Restarts=0" in info, \
        f"{info}\n{log}"
    assert (f"saved epoch 0, 4 batches done, to {backup}; not requeued. Every rank exits with "
            f"status 75. To resume, run the same job again: it resumes from {backup}") in log, log
    with np.load(backup) as saved:
        assert (int(saved["epoch"]), int(saved["batch"])) == (0, 4)
    again = submit(tmp_path, env, ["fit", "0,3"], sbatch_options=["--no-requeue"])
    state, info = wait_job(again, env, timeout=240)
    log = (tmp_path / "job.out").read_text()
    assert state == "COMPLETED", f"{info}\n{log}"
    check_resumed(tmp_path, log, stop_at)
