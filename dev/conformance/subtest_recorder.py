"""pytest plugin for the Horovod conformance run: each rank appends every test report, subtests
included, to its own JSON-lines file as it happens, so a job killed halfway still says which
tests finished and which one was running. A test that runs longer than the per-test limit is
recorded as hung and the process exits, which makes mpirun end the job.

Settings come from the environment: CONFORMANCE_RECORD (file name pattern with {rank}) and
CONFORMANCE_TEST_TIMEOUT (seconds; 0 for none).
"""

import json
import os
import threading
import time

_state = {}


def _rank():
    for name in ("OMPI_COMM_WORLD_RANK", "PMI_RANK"):
        if name in os.environ:
            return int(os.environ[name])
    return 0


def _write(**record):
    stream = _state.get("stream")
    if stream is None:
        return
    stream.write(json.dumps(record) + "\n")
    stream.flush()
    os.fsync(stream.fileno())


def pytest_configure(config):
    pattern = os.environ.get("CONFORMANCE_RECORD")
    if pattern:
        _state["stream"] = open(pattern.format(rank=_rank()), "a", encoding="utf-8")
    _state["timeout"] = float(os.environ.get("CONFORMANCE_TEST_TIMEOUT", "0"))


def pytest_collection_finish(session):
    _write(event="collected", nodeids=[item.nodeid for item in session.items])


def _hung(nodeid, seconds):
    _write(event="hung", nodeid=nodeid, seconds=seconds)
    os._exit(124)


def pytest_runtest_logstart(nodeid, location):
    _write(event="start", nodeid=nodeid, time=time.time())
    if _state["timeout"] > 0:
        timer = threading.Timer(_state["timeout"], _hung, (nodeid, _state["timeout"]))
        timer.daemon = True
        timer.start()
        _state["timer"] = timer


def pytest_runtest_logfinish(nodeid, location):
    timer = _state.pop("timer", None)
    if timer is not None:
        timer.cancel()
    _write(event="finish", nodeid=nodeid, time=time.time())


def _summary(report):
    if report.passed:
        return ""
    crash = getattr(report.longrepr, "reprcrash", None)
    if crash is not None:
        return crash.message
    if isinstance(report.longrepr, tuple):  # a skip: (file, line, reason)
        return str(report.longrepr[2])
    return str(report.longrepr).strip().splitlines()[-1] if report.longrepr else ""


def pytest_runtest_logreport(report):
    context = getattr(report, "context", None)
    _write(event="report", nodeid=report.nodeid, when=report.when, outcome=report.outcome,
           subtest=getattr(context, "msg", None) if context is not None else None,
           message=_summary(report)[:2000])
