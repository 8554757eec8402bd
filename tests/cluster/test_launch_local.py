"""mpirep-run on this machine with Open MPI: results, exit status, output files, and that
Ctrl-C or TERM to the launcher ends every rank."""
import os
import pathlib
import signal
import time

import pytest

from cluster_jobs import PY, RANK_CMD, check_ranks, finish, launcher_cmd, run, start

RUN = launcher_cmd()


@pytest.mark.parametrize("np_", [2, 4])
def test_ranks_allreduce_and_topology(np_):
    out = run(RUN + ["-np", str(np_)] + RANK_CMD).stdout
    lines = check_ranks(out, np_)
    assert {fields[2] for fields in lines.values()} == {os.uname().nodename}


def test_exit_status_of_a_failing_rank_is_the_jobs():
    done = run(RUN + ["-np", "2"] + RANK_CMD + ["--exit-code", "3"], check=False)
    assert done.returncode == 3, done.stderr


def test_tuning_flags_reach_every_rank():
    code = ("import os, sys; from mpi4py import MPI\n"
            "keys = ('MPIREP_FUSION_THRESHOLD', 'MPIREP_CYCLE_TIME', 'MPIREP_TIMELINE', 'EXTRA')\n"
            "values = ' '.join(str(os.environ.get(k)) for k in keys)\n"
            "sys.stdout.write(f'ENV {MPI.COMM_WORLD.rank} {values}\\n')\n")
    out = run(RUN + ["-np", "2", "--fusion-threshold-mb", "2", "--cycle-time-ms", "3.5",
                     "--timeline-filename", "/tmp/t.json", "-x", "EXTRA=a b",
                     PY, "-m", "mpi4py", "-c", code]).stdout
    lines = sorted(line for line in out.splitlines() if line.startswith("ENV"))
    assert lines == [f"ENV {r} 2097152 3.5 /tmp/t.json a b" for r in range(2)], out


def test_output_filename_writes_one_file_per_rank(tmp_path):
    run(RUN + ["-np", "2", "--output-filename", str(tmp_path / "logs")] + RANK_CMD)
    files = sorted(tmp_path.glob("logs/**/stdout"))
    assert len(files) == 2, list(tmp_path.rglob("*"))
    check_ranks("".join(f.read_text() for f in files), 2)


SLEEPER = """
import os, pathlib, signal, sys, time
from mpi4py import MPI
signal.signal(signal.SIGTERM, signal.SIG_IGN)   # only a hard kill ends this rank
pathlib.Path(sys.argv[1], f"pid.{MPI.COMM_WORLD.rank}").write_text(str(os.getpid()))
time.sleep(300)
"""


def _alive(pid):
    """Running: exists and is not a zombie (a dead rank may wait long to be reaped)."""
    try:
        return pathlib.Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_signal_to_the_launcher_ends_every_rank(tmp_path, sig):
    launcher = start(RUN + ["-np", "2", PY, "-c", SLEEPER, str(tmp_path)])
    give_up_at = time.monotonic() + 60
    while len(list(tmp_path.glob("pid.*"))) < 2:
        assert launcher.poll() is None and time.monotonic() < give_up_at, finish(launcher, 10)
        time.sleep(0.1)
    pids = [int(p.read_text()) for p in tmp_path.glob("pid.*")]
    os.kill(launcher.pid, sig)
    done = finish(launcher, 30)
    assert done.returncode == 128 + sig, done.stderr
    assert not [pid for pid in pids if _alive(pid)]
