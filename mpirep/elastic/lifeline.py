"""A rank's lifeline: the one TCP connection it keeps to mpirep-run's elastic driver.

It says hello once mpirep is initialised, and one goodbye when the process ends, saying how
(protocol.py).  A rank killed outright says nothing, and its connection closes: that silence
is how the driver tells a lost host from a bug.  The driver may send a hosts update (read by
State.check_host_updates) or stop.  On stop, or when the driver is gone, the rank exits at once
from the listening thread, whatever its main thread is waiting for: after a lost rank the
others may be blocked in a collective that can never complete.
"""
import atexit
import os
import signal
import socket
import sys
import threading
import time

from mpirep.elastic import protocol
from mpirep.errors import MpirepError

CONNECT_SECONDS = 30.0
# Keepalive probes notice a peer whose host has gone while the connection is idle; the user
# timeout does while data sent to it waits for an acknowledgement (a hosts update sent to a
# rank across a cut link), where keepalive never probes and retransmissions go on for minutes.
_KEEPALIVE = (("TCP_KEEPIDLE", 5), ("TCP_KEEPINTVL", 2), ("TCP_KEEPCNT", 3), ("TCP_USER_TIMEOUT", 11000))
LOSS_POLL_SECONDS = 0.2


def keep_alive(sock):
    """Let the kernel notice, within about 11 s, a peer whose host has gone."""
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
    for name, value in _KEEPALIVE:
        if hasattr(socket, name):
            sock.setsockopt(socket.IPPROTO_TCP, getattr(socket, name), value)


def _connect(address):
    host, _, port = address.rpartition(":")
    give_up_at = time.monotonic() + CONNECT_SECONDS
    while True:
        try:
            sock = socket.create_connection((host, int(port)), timeout=5)
            sock.settimeout(None)
            keep_alive(sock)
            return sock
        except OSError as err:
            if time.monotonic() >= give_up_at:
                raise MpirepError(f"cannot reach mpirep-run's elastic driver at {address} "
                                  f"({err}); ranks must be able to connect to the host that "
                                  "runs mpirep-run") from None
            time.sleep(0.2)


def _exit_now(status):
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(status)


class Lifeline:
    def __init__(self, settings, rank, size):
        self.hosts_serial = 0          # the newest hosts update the driver announced
        self._lock = threading.Lock()
        self._said_goodbye = False
        self._sock = _connect(settings.driver)
        self._sock.sendall(protocol.encode(
            protocol.HELLO, token=settings.token, generation=settings.generation, rank=rank,
            size=size, host=socket.gethostname(), pid=os.getpid()))
        threading.Thread(target=self._listen, name="mpirep-elastic-lifeline", daemon=True).start()
        threading.Thread(target=self._report_lost_peers, name="mpirep-elastic-losses", daemon=True).start()

    def goodbye(self, kind, **fields):
        """Tells the driver how this process ends; only the first goodbye counts."""
        with self._lock:
            if self._said_goodbye:
                return
            self._said_goodbye = True
            try:
                self._sock.sendall(protocol.encode(kind, **fields))
            except OSError:
                pass

    def _report_lost_peers(self):
        """Tells the driver once this rank's core has lost peers (docs/reliability.md), which
        their own lifelines may never say: a frozen process's kernel keeps its connection up."""
        from mpirep._core_loader import core

        while True:
            time.sleep(LOSS_POLL_SECONDS)
            if not core().is_initialized():
                continue
            lost = core().lost_peers()
            if lost:
                with self._lock:
                    try:
                        self._sock.sendall(protocol.encode(protocol.LOST, ranks=lost))
                    except OSError:
                        pass
                return

    def _listen(self):
        for line in self._sock.makefile("rb"):
            message = protocol.decode(line)
            if message is None:
                continue
            if message["kind"] == protocol.HOSTS_UPDATED:
                self.hosts_serial = max(self.hosts_serial, int(message["serial"]))
            elif message["kind"] == protocol.STOP:
                self.goodbye(protocol.STOPPED)
                _exit_now(protocol.STOPPED_EXIT_STATUS)
        # The driver ended this generation, or is gone: nobody would restart this rank.
        _exit_now(protocol.STOPPED_EXIT_STATUS)

    def install_hooks(self):
        """Goodbyes for an uncaught exception, the end of the process and SIGTERM."""
        previous_hook = sys.excepthook

        def on_uncaught(kind, value, traceback):
            self.goodbye(protocol.ERROR, error=f"{kind.__name__}: {value}")
            previous_hook(kind, value, traceback)

        sys.excepthook = on_uncaught
        atexit.register(self.goodbye, protocol.EXIT)
        try:
            if signal.getsignal(signal.SIGTERM) == signal.SIG_DFL:
                signal.signal(signal.SIGTERM, self._on_sigterm)
        except ValueError:   # not the main thread: leave signals alone
            pass

    def _on_sigterm(self, signum, frame):
        self.goodbye(protocol.SIGNALLED, signal=signum)
        _exit_now(128 + signum)


_lifeline = None


def start(settings, rank, size):
    """Connects this process to the driver, once (a later re-init keeps the connection)."""
    global _lifeline
    if _lifeline is None:
        _lifeline = Lifeline(settings, rank, size)
        _lifeline.install_hooks()
    return _lifeline


def current():
    """This process's lifeline, or None outside an elastic job."""
    return _lifeline


def start_if_launched(rank, size):
    """Called by mpirep.init: in a job mpirep-run launched elastically, connect to its driver."""
    from mpirep.elastic.settings import settings

    if settings().launched:
        start(settings(), rank, size)
