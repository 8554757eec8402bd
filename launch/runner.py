"""Run a launch plan and pass its exit status on; Ctrl-C or TERM ends the whole job
(exit status 128 + the signal).

The child (mpirun or srun) starts a session of its own.  A terminal's Ctrl-C then reaches only
this process, which turns it into one orderly TERM to the child's process group; mpirun and
srun pass it to their ranks.  If the job has not ended after a grace period, or on a second
signal, every process in the session gets SIGKILL: the session, not the process group, because
Open MPI puts each local rank in a process group of its own.
"""
import ctypes
import os
import signal
import subprocess
import sys
import time

from .errors import LaunchError

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
GRACE_SECONDS = 5.0
_PR_SET_PDEATHSIG = 1


def _die_with_parent():
    """Runs in the child before exec: if this launcher is SIGKILLed, the child gets SIGTERM
    and takes its ranks down with it rather than running on unsupervised."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


def _signal_group(pgid, sig):
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        pass


def session_members(sid):
    """Pids of the live processes in session sid (Linux /proc; elsewhere, the leader's group)."""
    if not os.path.isdir("/proc/self"):
        return []
    members = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except (OSError, IndexError):
                continue
            # after "pid (comm)": state, ppid, pgrp, session
            if fields[0] != "Z" and int(fields[3]) == sid:
                members.append(int(entry))
    return members


def _kill_session(sid, settle_seconds=2.0):
    """SIGKILL the session, then wait briefly until the kernel has really ended its members."""
    _signal_group(sid, signal.SIGKILL)
    give_up_at = time.monotonic() + settle_seconds
    while True:
        members = session_members(sid)
        if not members or time.monotonic() >= give_up_at:
            return
        for pid in members:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.01)


def exit_status(returncode):
    """A shell's view of how the child ended: its code, or 128 + the signal that killed it."""
    return 128 - returncode if returncode < 0 else returncode


def start(plan, environ):
    """Starts the plan's command in a session of its own, dying with this process."""
    preexec = _die_with_parent if sys.platform.startswith("linux") else None
    try:
        return subprocess.Popen(plan.argv, env={**environ, **plan.env}, start_new_session=True,
                                preexec_fn=preexec)
    except OSError as err:
        raise LaunchError(f"cannot start {plan.argv[0]}: {err}") from err


def end(child):
    """Ends what is left of a started plan: whatever is still in its session once its
    launcher is gone is a straggler."""
    _kill_session(child.pid)


def terminate(child):
    """Asks the launcher to end its job (it passes the TERM on to its ranks)."""
    _signal_group(child.pid, signal.SIGTERM)


def trap_stop_signals():
    """Records Ctrl-C, TERM and HUP in the returned list instead of dying of them; call the
    returned function to put the previous handlers back."""
    received = []
    previous = {sig: signal.signal(sig, lambda signum, frame: received.append(signum))
                for sig in STOP_SIGNALS}

    def restore():
        for sig, handler in previous.items():
            signal.signal(sig, handler)

    return received, restore


def run(plan, environ, grace_seconds=GRACE_SECONDS):
    received, restore_signals = trap_stop_signals()
    try:
        child = start(plan, environ)
        returncode = _supervise(child, received, grace_seconds)
    finally:
        restore_signals()
    end(child)
    if received:
        return 128 + received[0]
    return exit_status(returncode)


def _supervise(child, received, grace_seconds):
    kill_at = None
    while True:
        try:
            return child.wait(timeout=0.05)
        except subprocess.TimeoutExpired:
            pass
        if received and kill_at is None:
            terminate(child)
            kill_at = time.monotonic() + grace_seconds
        if kill_at is not None and (len(received) > 1 or time.monotonic() >= kill_at):
            _kill_session(child.pid)
