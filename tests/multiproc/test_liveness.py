"""Peer liveness (docs/reliability.md): a frozen rank ends the job within the peer timeout, named
by the others, and the flight records they write name it too; a rank that is only busy (a long
pause in Python) does not. Flight records are also written on a mismatch and on request."""
import json
import re
import subprocess
import sys

import pytest

from mpijob import REPO, mpirun

PEER_TIMEOUT_S = 5
# What a frozen rank may take to end the job: the timeout, passing the news on (2 s), MPI_Abort
# and mpirun winding down, on a loaded machine.
BOUND_S = PEER_TIMEOUT_S + 30


@pytest.mark.parametrize("ranks", [2, 3, 4])
def test_a_frozen_rank_ends_the_job_and_is_named(ranks, tmp_path):
    job = mpirun(ranks, ["tests/multiproc/jobs/frozen_rank.py", "freeze"], 120,
                 env={"MPIREP_PEER_TIMEOUT_SECONDS": str(PEER_TIMEOUT_S),
                      "MPIREP_FLIGHT_RECORDER_DIR": str(tmp_path)})
    print(job.output[-4000:])
    frozen = ranks - 1
    assert not job.timed_out, "the frozen rank hung the job"
    assert job.returncode != 0
    froze_at = float(re.search(rf"rank {frozen} freezes at ([\d.]+)", job.output).group(1))
    ended_at = job.started_at + job.seconds
    assert ended_at - froze_at < BOUND_S, f"ended {ended_at - froze_at:.0f} s after the freeze"
    assert re.search(rf"\[mpirep\] rank \d on \S+: rank {frozen} on \S+ has not answered for "
                     rf"{PEER_TIMEOUT_S} s", job.output), "no rank named the frozen one"
    assert "every result exact" not in job.output
    diagnosis = subprocess.run([sys.executable, "-m", "mpirep.diagnose", str(tmp_path)], cwd=REPO,
                               capture_output=True, text=True, timeout=60)
    print(diagnosis.stdout)
    assert diagnosis.returncode == 0
    assert re.search(rf"^Culprit: rank {frozen} on \S+, which stopped answering", diagnosis.stdout, re.M)
    assert "wrote none" in diagnosis.stdout and f"rank {frozen}" in diagnosis.stdout.splitlines()[0]


def test_a_long_pause_of_a_healthy_rank_is_not_a_lost_peer(tmp_path):
    job = mpirun(3, ["tests/multiproc/jobs/frozen_rank.py", "pause", str(2 * PEER_TIMEOUT_S)], 120,
                 env={"MPIREP_PEER_TIMEOUT_SECONDS": str(PEER_TIMEOUT_S),
                      "MPIREP_FLIGHT_RECORDER_DIR": str(tmp_path)})
    print(job.output[-3000:])
    assert job.returncode == 0
    assert job.output.count("every result exact") == 3
    assert "has not answered" not in job.output


@pytest.mark.parametrize("ranks", [2, 3])
def test_flight_records_on_a_mismatch_and_on_request(ranks, tmp_path):
    job = mpirun(ranks, ["tests/multiproc/jobs/flight_record_job.py"], 120,
                 env={"MPIREP_FLIGHT_RECORDER_DIR": str(tmp_path)})
    assert job.returncode == 0, job.output[-4000:]
    assert job.output.count("records right") == ranks
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"rank{r}.json" for r in range(ranks)]


def test_the_diagnosis_takes_the_latest_job_in_a_shared_directory(tmp_path):
    """A 3-rank job, then a 2-rank one, write their records into one directory, as jobs run
    from one working directory do: the diagnosis reads the 2-rank job's, whose ranks name one
    job, and lists the 3-rank job's rank2.json as left out."""
    jobs = {}
    for ranks in (3, 2):
        job = mpirun(ranks, ["tests/multiproc/jobs/flight_record_job.py"], 120,
                     env={"MPIREP_FLIGHT_RECORDER_DIR": str(tmp_path)})
        assert job.returncode == 0, job.output[-4000:]
        jobs[ranks] = {json.loads((tmp_path / f"rank{r}.json").read_text())["job"]
                       for r in range(ranks)}
    assert len(jobs[3]) == len(jobs[2]) == 1 and jobs[3] != jobs[2]
    diagnosis = subprocess.run([sys.executable, "-m", "mpirep.diagnose", str(tmp_path)], cwd=REPO,
                               capture_output=True, text=True, timeout=60)
    assert diagnosis.returncode == 0, diagnosis.stderr
    lines = diagnosis.stdout.splitlines()
    assert lines[0] == f"Diagnosing job {jobs[2].pop()}; ignored:"
    assert re.fullmatch(rf"  rank2\.json: another job \({jobs[3].pop()}, 3 ranks, written \d+ s earlier\)",
                        lines[1])
    assert lines[2] == "Flight records of ranks 0, 1 of 2."
