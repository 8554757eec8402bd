"""One generation of an elastic job: its launcher (mpirun or srun) and its ranks' lifelines,
watched until the launcher exits.

The first sign of a lost rank (a lifeline closing with no goodbye, or a rank reporting that its
core lost peers) or of a rank asking for a restart makes the driver stop the generation: it tells every rank to exit.  Once every rank's
lifeline has closed, no rank of this generation runs any more (a rank closes it only by
exiting), so the next generation may start at once: the launcher, which takes seconds to
notice and wind down (mpirun about 3 s), is ended in the background.
"""
import subprocess
import threading
import time

from mpirep.elastic import protocol

from .. import runner
from .verdict import RankRecord, judge

POLL_SECONDS = 0.05
STOP_GRACE_SECONDS = 10.0    # after a stop, the launcher's session is killed if still there
RESTART_GRACE_SECONDS = 5.0  # for every rank to leave after the first asked for a restart
                             # together (hosts changed), before they are stopped
DRAIN_SECONDS = 2.0          # after the launcher exits, for the last goodbyes to arrive


class Generation:
    def __init__(self, number, hosts, server):
        self.number = number
        self.server = server
        # mpirun and srun both fill each host's slots before the next host's
        self.records = [RankRecord(host.name) for host in hosts for _ in range(host.slots)]
        self.connections = {}     # rank -> its lifeline
        self.stopped = False
        self.hosts_serial = 0
        self.finisher = None      # a thread ending a launcher left to wind down by itself
        self.restart_asked_at = None

    def handle(self, kind, connection, message):
        if kind == "hello":
            self._hello(connection, message)
            return
        rank = next((r for r, c in self.connections.items() if c is connection), None)
        if rank is None:
            return
        record = self.records[rank]
        if kind == "closed":
            del self.connections[rank]
            if record.goodbye is None and not self.stopped:
                record.quiet = True
        elif message["kind"] == protocol.LOST:
            # The data path lost these ranks (peer timeout): their hosts are lost, as if their
            # lifelines had closed, which across a cut link or from a frozen process they may
            # never do.
            for lost in message.get("ranks", []):
                if isinstance(lost, int) and 0 <= lost < len(self.records) and not self.stopped:
                    self.records[lost].quiet = True
        elif record.goodbye is None and message["kind"] in (
                protocol.EXIT, protocol.ERROR, protocol.RESTART, protocol.STOPPED,
                protocol.SIGNALLED):
            record.goodbye = message["kind"]
            record.said_at = sum(r.goodbye is not None for r in self.records)
            record.together = bool(message.get("together"))
            if record.goodbye == protocol.RESTART and self.restart_asked_at is None:
                self.restart_asked_at = time.monotonic()
            record.detail = str(message.get("error") or message.get("reason") or "")
            if record.goodbye == protocol.SIGNALLED and not self.stopped:
                record.quiet = True

    def _hello(self, connection, message):
        rank = message.get("rank")
        if message.get("generation") != self.number or not isinstance(rank, int) \
                or not 0 <= rank < len(self.records) or rank in self.connections \
                or message.get("size") != len(self.records):
            self.server.close(connection)   # a rank of an earlier generation: it exits
            return
        self.connections[rank] = connection
        self.records[rank].connected = True

    def wants_stop(self):
        """A rank went quiet, or asked for a restart that the others are not all making by
        themselves (in time)."""
        if self.stopped:
            return False
        restarts = [r for r in self.records if r.goodbye == protocol.RESTART]
        late = self.restart_asked_at is not None \
            and time.monotonic() - self.restart_asked_at > RESTART_GRACE_SECONDS
        return any(r.quiet for r in self.records) or late \
            or any(not r.together for r in restarts)

    def stop(self):
        self.stopped = True
        for connection in self.connections.values():
            self.server.send(connection, protocol.STOP)

    def notify_hosts_updated(self):
        self.hosts_serial += 1
        for connection in self.connections.values():
            self.server.send(connection, protocol.HOSTS_UPDATED, serial=self.hosts_serial)

    def run(self, plan, environ, received_signals, hosts_updated):
        """Starts the plan and watches it to the end; returns its verdict (verdict.Outcome).
        ``hosts_updated()`` says whether to tell the ranks that hosts changed."""
        child = runner.start(plan, environ)
        ending_since = None
        while True:
            for event in self.server.poll(POLL_SECONDS):
                self.handle(*event)
            if self.wants_stop():
                self.stop()
                ending_since = time.monotonic()
            if received_signals and ending_since is None:
                self.stopped = True
                runner.terminate(child)
                ending_since = time.monotonic()
            # Only once every rank listens, so that all of them hear it.
            if not self.stopped and len(self.connections) == len(self.records) \
                    and hosts_updated():
                self.notify_hosts_updated()
            status = child.poll()
            if status is not None:
                break
            if self._all_gone() and not received_signals:
                self.finisher = threading.Thread(target=_wind_down, args=(child,), daemon=True)
                self.finisher.start()
                return judge(self.records, None)
            if ending_since is not None and time.monotonic() - ending_since > STOP_GRACE_SECONDS:
                runner.end(child)
        runner.end(child)
        self._drain()
        return judge(self.records, runner.exit_status(status))

    def _all_gone(self):
        """Stopped, and every rank connected and has closed its lifeline since."""
        return self.stopped and not self.connections and all(r.connected for r in self.records)

    def _drain(self):
        give_up_at = time.monotonic() + DRAIN_SECONDS
        while self.connections and time.monotonic() < give_up_at:
            for event in self.server.poll(POLL_SECONDS):
                self.handle(*event)
        for rank, connection in list(self.connections.items()):
            self.records[rank].open_at_end = self.records[rank].goodbye is None
            self.server.close(connection)
        self.connections.clear()


def _wind_down(child):
    runner.terminate(child)
    try:
        child.wait(timeout=STOP_GRACE_SECONDS)
    except subprocess.TimeoutExpired:   # still there: its session is killed below
        pass
    runner.end(child)
