"""mpirep.preemption in one process: the signal names of the setting, the handler that only
records, the agreement of ranks (simulated by threads over a fake allreduce), the atomic save
(cut off by SIGKILL, and hit by signals, in a child process), and how the job ends."""

import os
import signal
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest

from mpirep.preemption import EXIT_STATUS, SignalWatcher, atomic_write, parse_signals, stop_job
from mpirep.preemption import _slurm


def test_signal_names():
    assert parse_signals("USR1,TERM") == [signal.SIGUSR1, signal.SIGTERM]
    assert parse_signals(" sigusr2 , 15,SIGUSR2") == [signal.SIGUSR2, signal.SIGTERM]
    assert parse_signals("") == []
    with pytest.raises(ValueError, match="preemption_signals: 'USR3' is not a signal name"):
        parse_signals("USR1,USR3")
    with pytest.raises(ValueError, match="KILL cannot be caught"):
        parse_signals("KILL")


def test_the_handler_records_every_signal_and_gives_the_old_one_back():
    before = signal.getsignal(signal.SIGUSR1)
    watcher = SignalWatcher([signal.SIGUSR1, signal.SIGUSR2], allreduce_max=lambda flag: flag)
    with watcher:
        assert not watcher.should_stop()
        os.kill(os.getpid(), signal.SIGUSR2)
        os.kill(os.getpid(), signal.SIGUSR1)
        assert watcher.received == [signal.SIGUSR2, signal.SIGUSR1]
        assert watcher.should_stop()
    assert signal.getsignal(signal.SIGUSR1) == before


def test_no_signals_means_no_collective():
    def never(flag):
        raise AssertionError("no collective expected")
    assert not SignalWatcher([], allreduce_max=never).should_stop()


class _FakeAllreduceMax:
    """An allreduce of ``ranks`` threads: each call returns the maximum of the flags that the
    threads gave in their call of the same round."""

    def __init__(self, ranks):
        self.flags = [0] * ranks
        self.barrier = threading.Barrier(ranks)

    def for_rank(self, rank):
        def allreduce_max(flag):
            self.flags[rank] = flag
            self.barrier.wait()
            result = max(self.flags)
            self.barrier.wait()
            return result
        return allreduce_max


@pytest.mark.parametrize("signalled_at", [{1: 4}, {0: 6, 2: 3}, {0: 0, 1: 0, 2: 0}, {2: 9}],
                         ids=["one-rank", "ranks-at-different-steps", "every-rank", "last-step"])
def test_every_rank_stops_after_the_same_step(signalled_at):
    ranks, steps = 3, 10
    fake = _FakeAllreduceMax(ranks)
    stopped_after = [None] * ranks
    trained = [[] for _ in range(ranks)]

    def rank_loop(rank):
        watcher = SignalWatcher([signal.SIGUSR1], allreduce_max=fake.for_rank(rank))
        for step in range(steps):
            if signalled_at.get(rank) == step:   # arrives during the step
                watcher._record(signal.SIGUSR1, None)
            trained[rank].append(step)
            if watcher.should_stop():
                stopped_after[rank] = step
                return

    threads = [threading.Thread(target=rank_loop, args=(r,)) for r in range(ranks)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    first = min(signalled_at.values())
    assert stopped_after == [first] * ranks
    assert trained == [list(range(first + 1))] * ranks


def test_atomic_write_replaces_or_leaves_the_old_file(tmp_path):
    path = tmp_path / "backup.npz"
    with atomic_write(path) as temporary, open(temporary, "wb") as file:
        np.savez(file, value=np.arange(4))
    with pytest.raises(RuntimeError):
        with atomic_write(path) as temporary, open(temporary, "wb") as file:
            file.write(b"half a backup")
            raise RuntimeError("the save failed")
    assert np.load(path)["value"].tolist() == [0, 1, 2, 3]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["backup.npz"]


_WRITER = textwrap.dedent("""
    import os, signal, sys
    import numpy as np
    from mpirep.preemption import SignalWatcher, atomic_write
    path, how = sys.argv[1], sys.argv[2]
    watcher = SignalWatcher([signal.SIGUSR1, signal.SIGTERM], allreduce_max=lambda f: f).install()
    big = np.full(1 << 20, 2.0)
    with atomic_write(path) as temporary, open(temporary, "wb") as file:
        np.save(file, big[: 1 << 19])
        os.kill(os.getpid(), signal.SIGUSR1 if how == "signals" else signal.SIGKILL)
        os.kill(os.getpid(), signal.SIGTERM)
        np.save(file, big[1 << 19:])
    print(len(watcher.received))
""")


def test_a_save_survives_signals_and_a_kill_leaves_the_last_backup(tmp_path):
    path = tmp_path / "backup.npy"
    np.save(path, np.full(1 << 20, 1.0))
    killed = subprocess.run([sys.executable, "-c", _WRITER, str(path), "kill"],
                            capture_output=True, text=True, timeout=120)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    assert (np.load(path) == 1.0).all()
    signalled = subprocess.run([sys.executable, "-c", _WRITER, str(path), "signals"],
                               capture_output=True, text=True, timeout=120)
    assert signalled.returncode == 0 and signalled.stdout.strip() == "2", signalled.stderr
    with open(path, "rb") as file:
        halves = np.load(file), np.load(file)
    assert all((half == 2.0).all() and half.size == 1 << 19 for half in halves)


class _Run:
    def __init__(self, returncode=0, stdout="", stderr=""):
        self.returncode, self.stdout, self.stderr = returncode, stdout, stderr


def test_a_requeueable_slurm_batch_job_is_found_by_scontrol():
    shown = ("JobId=42 JobName=train UserId=u(1) Requeue={requeue} Restarts=0 BatchFlag={batch} "
             "Reboot=0 ExitCode=0:0")
    calls = []

    def scontrol(requeue, batch):
        def run(argv, **kwargs):
            calls.append(argv)
            return _Run(stdout=shown.format(requeue=requeue, batch=batch))
        return run

    assert _slurm.requeueable_job({"SLURM_JOB_ID": "42"}, scontrol(1, 1)) == "42"
    assert calls[-1] == ["scontrol", "show", "job", "--oneliner", "42"]
    assert _slurm.requeueable_job({"SLURM_JOB_ID": "42"}, scontrol(0, 1)) is None
    assert _slurm.requeueable_job({"SLURM_JOB_ID": "42"}, scontrol(1, 0)) is None  # salloc/srun
    assert _slurm.requeueable_job({}, scontrol(1, 1)) is None
    assert _slurm.requeue("42", lambda argv, **kw: _Run(1, stderr="Access denied")) == "Access denied"


def _stop(rank, job_id, problem, outcome_from_rank0=None, capsys=None):
    sent = []

    def broadcast(code):
        sent.append(code)
        return code if outcome_from_rank0 is None else outcome_from_rank0

    with pytest.raises(SystemExit) as ended:
        stop_job(rank, "epoch 1, 4 batches done", "run it again",
                 requeueable_job=lambda: job_id, requeue=lambda job: problem,
                 broadcast_from_rank0=broadcast, out=sys.stdout)
    return ended.value.code, capsys.readouterr().out


def test_how_the_job_ends(capsys):
    code, said = _stop(0, "42", None, capsys=capsys)
    assert code == 0 and "requeued Slurm job 42" in said
    code, said = _stop(0, "42", "Access denied", capsys=capsys)
    assert code == EXIT_STATUS == 75
    assert "scontrol requeue 42 failed: Access denied" in said and "To resume, run it again" in said
    code, said = _stop(0, None, None, capsys=capsys)
    assert code == 75 and "not requeued. Every rank exits with status 75. To resume" in said
    for rank0s_outcome, expected in ((1, 0), (2, 75)):   # the others follow rank 0
        code, said = _stop(1, "42", None, rank0s_outcome, capsys=capsys)
        assert code == expected and said == ""
