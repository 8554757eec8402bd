"""Elastic training (docs/elastic.md) on real launchers: mpirun across the emulated hosts h1
and h2, sbatch on the 2-node Slurm cluster, and mpirun on this machine.

1. Losing a host: every rank of h2 is SIGKILLed mid-epoch; training goes on on h1 from the
   last commit, and ends with the weights that training from that commit gives.
2. A host added by the discovery script joins at the next commit.
3. Too few slots past --elastic-timeout, or a reset past --reset-limit, end the job with a
   message that says which.
4. A rank that raises (a bug) ends the job with that error, without a restart.
5. Case 1 under sbatch on the 2-node Slurm cluster.
"""
import os
import re
import shutil
import tempfile

import numpy as np
import pytest

from cluster_jobs import (HERE, NET, ON_HOST, ON_NET, PY, SSH_CONFIG, job_state, launcher_cmd,
                          run, wait_job)
from elastic_jobs import FollowedFile, Job, kill_host_at

KERAS_JOB = [PY, str(HERE / "elastic_keras_job.py")]
NUMPY_JOB = [PY, str(HERE / "elastic_numpy_job.py")]
ACROSS_HOSTS = ["--ssh-config-file", SSH_CONFIG, "--network-interface", NET]
QUIET_TF = {"TF_CPP_MIN_LOG_LEVEL": "3"}
EPOCHS, STEPS = 3, 6


def on_h1(args):
    return [ON_HOST, "h1"] + launcher_cmd() + args


def step_index(event):
    return event["epoch"] * STEPS + event["batch"]


@pytest.fixture
def store_dir():
    """A directory in /dev/shm for this test's job alone (--elastic-store-dir), which must
    hold nothing once the job has ended: elastic jobs of other suites running at the same time
    keep their commits in /dev/shm itself."""
    path = tempfile.mkdtemp(prefix="mpirep-test-store-", dir="/dev/shm")
    yield path
    left = os.listdir(path)
    shutil.rmtree(path, ignore_errors=True)
    assert not left, f"the elastic job left its commits in {path}: {left}"


def first_resumes(job, gen):
    return [e for e in job.of("resume", gen=gen) if e["call"] == 0]


def check_lost_host_run(job, lost, ranks_after, reference_digest):
    """Case 1's checks, shared with case 5, for a job that ended well."""
    done_before = [e for e in job.of("step", gen=0) + job.of("commit", gen=0)]
    last_commit = max(step_index(e) for e in done_before)
    resumed = first_resumes(job, 1)
    assert len(resumed) == ranks_after, job.output
    # Resumed from the last commit some rank reported, or the one whose report the kill cut off.
    assert last_commit <= step_index(resumed[0]) <= last_commit + 1, job.output
    assert len({e["digest"] for e in resumed}) == 1, "ranks resumed from different states"
    resets = job.of("reset", gen=1)
    assert sorted(e["rank"] for e in resets) == list(range(ranks_after))
    assert {e["size"] for e in resets} == {ranks_after}
    for rank in range(ranks_after):   # counters only move forward after the resume
        indices = [step_index(resumed[0])] + [step_index(e) for e in job.of("step", 1, rank)]
        assert indices == sorted(set(indices)) and indices[-1] == EPOCHS * STEPS, indices
    by_step = {}
    for event in job.of("step", gen=1):
        by_step.setdefault(step_index(event), set()).add(event["digest"])
    assert all(len(digests) == 1 for digests in by_step.values()), by_step
    finals = job.of("final")
    assert len(finals) == ranks_after and {e["epoch"] for e in finals} == {EPOCHS}
    assert {e["digest"] for e in finals} == {reference_digest}, \
        "final state differs from training from the commit"
    assert f"generation 0 ended: lost {lost}" in job.output


def reference_digest(tmp_path, dump, ranks):
    """The final state of training from the dumped commit with a plain mpirun."""
    out = run(["mpirun", "--oversubscribe", "--bind-to", "none", "-np", str(ranks)] + KERAS_JOB
              + ["--epochs", str(EPOCHS), "--steps", str(STEPS), "--load", str(dump)],
              QUIET_TF, timeout=240).stdout
    digests = set(re.findall(r'"event": "final".*"digest": "(\w+)"', out))
    assert len(digests) == 1, out
    return digests.pop()


@pytest.mark.netns
def test_training_goes_on_after_losing_a_host(tmp_path, store_dir):
    dump = tmp_path / "resumed.pickle"
    kill = kill_host_at("h2", gen=0, epoch=1, batch=2)
    job = Job(on_h1(["--min-np", "2", "-H", "h1:2,h2:2", "--elastic-store-dir", store_dir]
                    + ACROSS_HOSTS + KERAS_JOB
                    + ["--epochs", str(EPOCHS), "--steps", str(STEPS), "--step-seconds", "0.2",
                       "--dump", str(dump)]), {**ON_NET, **QUIET_TF}, on_event=kill)
    assert len(kill.pids) == 2 and kill.killed_at, job.output
    assert job.returncode == 0, job.output
    assert "generation 1: 2 ranks on h1:2" in job.output
    check_lost_host_run(job, "h2", 2, reference_digest(tmp_path, dump, 2))


@pytest.mark.netns
def test_a_discovered_host_joins_at_the_next_commit(tmp_path, store_dir):
    hosts = tmp_path / "hosts"
    hosts.write_text("h1:2\n")

    def add_h2(event, job):
        if event["event"] == "step" and event["gen"] == 0 and event["rank"] == 0 \
                and (event["epoch"], event["batch"]) == (0, 3):
            hosts.write_text("h1:2\nh2:2\n")

    job = Job(on_h1(["--min-np", "2", "--host-discovery-script", f"cat {hosts}",
                     "--elastic-store-dir", store_dir] + ACROSS_HOSTS + KERAS_JOB
                    + ["--epochs", str(EPOCHS), "--steps", str(STEPS), "--step-seconds", "0.2"]),
              {**ON_NET, **QUIET_TF}, on_event=add_h2)
    assert job.returncode == 0, job.output
    assert "generation 0 ended: the hosts changed" in job.output
    assert "generation 1: 4 ranks on h1:2,h2:2" in job.output
    resets = job.of("reset", gen=1)
    assert sorted(e["rank"] for e in resets) == [0, 1, 2, 3] and {e["size"] for e in resets} == {4}
    assert {e["host"] for e in job.of("start", gen=1)} == {"h1", "h2"}
    # The interrupt comes out of the first commit after the last one reported: that commit is
    # kept, so no batch is lost or done twice. It is the next batch's (one index on), or, where
    # the last report is an epoch's last batch, that epoch's own commit (epoch e, batch STEPS is
    # epoch e + 1, batch 0: the same index), depending on when the new host is seen.
    reported = job.of("step", gen=0) + job.of("commit", gen=0)
    last = max(reported, key=lambda e: (step_index(e), e["event"] == "commit"))
    epoch_commit_next = last["event"] == "step" and last["batch"] == STEPS
    resumed = first_resumes(job, 1)
    assert {step_index(e) for e in resumed} == {step_index(last) + (0 if epoch_commit_next else 1)}, \
        job.output
    assert len({e["digest"] for e in resumed}) == 1
    steps = job.of("step", gen=1)
    for index in {step_index(e) for e in steps}:   # the new host's ranks agree from the start
        same = [e for e in steps if step_index(e) == index]
        assert len(same) == 4 and len({e["digest"] for e in same}) == 1, same
    assert len({e["digest"] for e in job.of("final")}) == 1 and len(job.of("final")) == 4


def numpy_expected(sizes):
    """The vector elastic_numpy_job.py ends with, given the world size at each step."""
    w = np.zeros(8)
    for step, n in enumerate(sizes):
        w += np.arange(8.0) * n * (n + 1) / 2 + n * step
    return w


@pytest.mark.netns
def test_too_few_slots_after_the_elastic_timeout_ends_the_job():
    kill = kill_host_at("h2", gen=0, epoch=0, batch=3)
    # 200 steps of 0.1 s: the job cannot end by itself before this test, reading its output
    # behind on a loaded machine, kills h2's ranks
    job = Job(on_h1(["--min-np", "4", "--elastic-timeout", "3", "-H", "h1:2,h2:2"] + ACROSS_HOSTS
                    + NUMPY_JOB + ["--steps", "200"]), ON_NET, on_event=_numpy_kill(kill))
    assert job.returncode != 0
    message = ("only 2 slots are usable (h1:2; left out after failing: h2), fewer than "
               "--min-np 4, after waiting 3 s (--elastic-timeout)")
    assert message in job.output, job.output
    ended = next(t for t, line in job.lines if "generation 0 ended: lost h2" in line)
    failed = next(t for t, line in job.lines if message in line)
    assert failed - ended >= 3
    assert "generation 1" not in job.output


@pytest.mark.netns
def test_a_reset_past_the_reset_limit_ends_the_job(tmp_path):
    """h2 is lost (reset 1); once generation 1 runs, discovery offers h1 a third slot, which
    would need reset 2.  Discovery, not a cooldown's clock, makes the second change, so it
    always comes while generation 1 runs."""
    hosts = tmp_path / "hosts"
    hosts.write_text("h1:2\nh2:2\n")
    kill = _numpy_kill(kill_host_at("h2", gen=0, epoch=0, batch=3))

    def lose_h2_then_grow_h1(event, job):
        kill(event, job)
        if event["event"] == "step" and event["gen"] == 1 and event["rank"] == 0:
            hosts.write_text("h1:3\nh2:2\n")

    job = Job(on_h1(["--min-np", "2", "--reset-limit", "1", "--host-discovery-script",
                     f"cat {hosts}"] + ACROSS_HOSTS + NUMPY_JOB + ["--steps", "200"]),
              ON_NET, on_event=lose_h2_then_grow_h1)
    assert job.returncode != 0
    assert "generation 0 ended: lost h2" in job.output
    assert "generation 1: 2 ranks on h1:2" in job.output
    assert "generation 1 ended: the hosts changed" in job.output
    assert "the job needs reset 2, but --reset-limit is 1" in job.output, job.output
    assert "generation 2" not in job.output
    # Generation 1 resumed where generation 0 committed last, and only moved forward.
    steps0 = [e["step"] for e in job.of("step", gen=0, rank=0)]
    resumed = job.of("resume", gen=1, rank=0)[0]
    assert steps0[-1] <= resumed["step"] <= steps0[-1] + 1
    sizes = [4] * resumed["step"]
    assert resumed["w"] == numpy_expected(sizes).tolist()


def _numpy_kill(kill):
    """kill_host_at for the numpy job, whose steps count from 1 and have no epochs."""
    def on_event(event, job):
        if "step" in event and "epoch" not in event:
            event = {**event, "epoch": 0, "batch": event["step"]}
        kill(event, job)
    on_event.pids, on_event.killed_at = kill.pids, kill.killed_at
    return on_event


def test_an_exception_in_a_rank_ends_the_job_without_restarting():
    job = Job(launcher_cmd() + ["--min-np", "2", "-H", "localhost:2"] + NUMPY_JOB
              + ["--raise-at", "3"], timeout=120)
    assert job.returncode != 0
    assert "ValueError: bad batch at step 3" in job.output
    assert ("rank 1 on localhost raised ValueError: bad batch at step 3; an error in the "
            "program is not retried") in job.output, job.output
    assert "generation 1" not in job.output
    assert max(e["step"] for e in job.of("step")) == 3


@pytest.mark.slurm2
def test_training_goes_on_after_losing_a_slurm_node(tmp_path, store_dir):
    env = {"SLURM_CONF": os.environ["MPIREP_SLURM2_CONF"], **ON_NET, **QUIET_TF}
    dump, out = tmp_path / "resumed.pickle", tmp_path / "job.out"
    script = tmp_path / "job.sbatch"
    script.write_text("#!/bin/bash\n" + " ".join(
        launcher_cmd() + ["--min-np", "1", "--elastic-store-dir", store_dir] + KERAS_JOB
        + ["--epochs", str(EPOCHS), "--steps", str(STEPS), "--step-seconds", "0.2",
           "--dump", str(dump)]) + "\n")
    submitted = run(["sbatch", "--parsable", "-N", "2", "--ntasks-per-node=1", "--no-kill",
                     "-o", str(out), "-D", str(tmp_path), str(script)], env)
    jobid = submitted.stdout.strip().split(";")[0]
    job = FollowedFile(out, kill_host_at("h2", gen=0, epoch=1, batch=2),
                       lambda: job_state(jobid, env)[0] is not None, timeout=240)
    state, info = wait_job(jobid, env, timeout=60)
    assert state == "COMPLETED", f"{info}\n{job.output}"
    assert "generation 1: 1 ranks on h1:1" in job.output, job.output
    check_lost_host_run(job, "h2", 1, reference_digest(tmp_path, dump, 1))
