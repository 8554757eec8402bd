"""Reading an elastic job's output as it comes: the `ELASTIC <json>` events the rank programs
print, and mpirep-run's own lines.  A test may act on an event as it arrives (kill a host's
ranks, add a host) through ``on_event``.  Job runs a command under a hard time bound;
FollowedFile follows the output file of a Slurm batch job."""
import json
import os
import signal
import subprocess
import threading
import time

from cluster_jobs import job_env


EVENT_MARK = "ELASTIC "
_DECODER = json.JSONDecoder()


class Events:
    def __init__(self, on_event):
        self.events, self.lines = [], []
        self._on_event = on_event

    def _take(self, line):
        self.lines.append((time.time(), line))
        # mpirun forwards each rank's stdout and stderr separately, so another rank's text may
        # precede an event on its line.
        start = line.find(EVENT_MARK)
        if start >= 0:
            event, _ = _DECODER.raw_decode(line, start + len(EVENT_MARK))
            self.events.append(event)
            if self._on_event:
                self._on_event(event, self)

    @property
    def output(self):
        return "\n".join(line for _, line in self.lines)

    def of(self, event, gen=None, rank=None):
        return [e for e in self.events if e["event"] == event
                and (gen is None or e["gen"] == gen) and (rank is None or e["rank"] == rank)]


class Job(Events):
    def __init__(self, cmd, env=None, on_event=None, timeout=240):
        super().__init__(on_event)
        self.proc = subprocess.Popen(cmd, env=job_env(env), stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True, start_new_session=True)
        self.timed_out = False
        timer = threading.Timer(timeout, self._kill)
        timer.start()
        try:
            for line in self.proc.stdout:
                self._take(line.rstrip("\n"))
            self.returncode = self.proc.wait()
        finally:
            timer.cancel()
        assert not self.timed_out, f"timed out after {timeout}s:\n{self.output}"

    def _kill(self):
        self.timed_out = True
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(self.proc.pid, sig)
            except ProcessLookupError:
                return
            time.sleep(5)


class FollowedFile(Events):
    """Follows ``path`` until ``finished()`` and the file has stopped growing."""

    def __init__(self, path, on_event, finished, timeout=240):
        super().__init__(on_event)
        give_up_at, partial, quiet_since, offset = time.monotonic() + timeout, "", None, 0
        while time.monotonic() < give_up_at:
            data = ""
            if os.path.exists(path):
                with open(path) as f:
                    f.seek(offset)
                    data = f.read()
                    offset = f.tell()
            partial += data
            *complete, partial = partial.split("\n")
            for line in complete:
                self._take(line)
            if data:
                quiet_since = None
            elif finished():
                quiet_since = quiet_since or time.monotonic()
                if time.monotonic() - quiet_since > 1.0:
                    return
            time.sleep(0.05)
        raise AssertionError(f"{path} still growing after {timeout}s:\n{self.output}")


def kill_host_at(host, gen, epoch, batch):
    """An on_event that SIGKILLs every rank of ``host`` (from their start events) once rank 0
    of generation ``gen`` reports a step at (epoch, batch) or later."""
    pids, done = [], []

    def on_event(event, job):
        if event["event"] == "start" and event["gen"] == gen and event["host"] == host:
            pids.append(event["pid"])
        if not done and event["event"] == "step" and event["gen"] == gen and event["rank"] == 0 \
                and (event["epoch"], event["batch"]) >= (epoch, batch):
            done.append(time.time())
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass   # it exited already; the job's output says why

    on_event.pids, on_event.killed_at = pids, done
    return on_event
