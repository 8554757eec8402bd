"""The launcher's supervision of its child, with a fake launcher in place of mpirun: exit
status, and the hard kill of a job that ignores TERM (processes only, no MPI)."""
import os
import pathlib
import signal
import subprocess
import sys
import time

import pytest


# A "launcher" that ignores TERM and starts a "rank" in a process group of its own (as Open
# MPI does) that ignores TERM too; both write their pids.
STUBBORN_JOB = """
import os, signal, subprocess, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
rank = subprocess.Popen([sys.executable, "-c",
    "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(300)"],
    preexec_fn=os.setpgrp)
open(sys.argv[1], "w").write(f"{os.getpid()} {rank.pid}")
time.sleep(300)
"""

SUPERVISE = """
import os, sys
from mpirep.launch import runner
from mpirep.launch.job import Plan
sys.exit(runner.run(Plan(sys.argv[1:], {"FROM_PLAN": "1"}), dict(os.environ), grace_seconds=1))
"""


def supervise(*argv, **kwargs):
    return subprocess.Popen([sys.executable, "-c", SUPERVISE, *argv],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True, **kwargs)


def _alive(pid):
    try:
        return pathlib.Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def _finish(proc, timeout=30):
    try:
        return proc.communicate(timeout=timeout)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)


@pytest.mark.parametrize("code, status", [("raise SystemExit(7)", 7),
                                          ("import os; os.kill(os.getpid(), 9)", 128 + 9),
                                          ("import os; assert os.environ['FROM_PLAN'] == '1'", 0)])
def test_exit_status_is_the_childs(code, status):
    proc = supervise(sys.executable, "-c", code)
    _finish(proc)
    assert proc.returncode == status


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="sessions are read from /proc")
def test_term_then_hard_kill_ends_a_job_that_ignores_term(tmp_path):
    pids_file = tmp_path / "pids"
    proc = supervise(sys.executable, "-c", STUBBORN_JOB, str(pids_file))
    give_up_at = time.monotonic() + 30
    while not pids_file.exists() or len(pids_file.read_text().split()) < 2:
        assert proc.poll() is None and time.monotonic() < give_up_at
        time.sleep(0.05)
    pids = [int(pid) for pid in pids_file.read_text().split()]
    started = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    _finish(proc)
    assert proc.returncode == 128 + signal.SIGTERM
    assert time.monotonic() - started < 10   # 1 s grace, then SIGKILL
    assert not [pid for pid in pids if _alive(pid)]
