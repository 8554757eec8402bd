"""The one driver of the tests that start mpirun jobs (tests/multiproc, tests/tf,
tests/replicator): it runs `timeout -k 10 T mpirun ...` and collects what the job printed.

Every job has a hard time bound: timeout(1) sends TERM after T seconds and KILL 10 s later, and
a process-group kill ends a job that outlives even that (a hung mpirun has been seen here to
ignore TERM). A job never inherits the launcher variables of an MPI job that the test process
may itself belong to; it gets this machine's launch settings and this checkout's mpirep.
"""
import functools
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
LAUNCH_ENV = {
    "OMPI_ALLOW_RUN_AS_ROOT": "1",
    "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
    "OMPI_MCA_btl_tcp_if_include": "lo",
    "OMPI_MCA_oob_tcp_if_include": "lo",
    "TF_CPP_MIN_LOG_LEVEL": "2",
}
# Where the jobs' ranks write flight records (on a mismatch, a stall, a failure), rather than
# the checkout; a test that reads them gives its job a directory of its own.
FLIGHT_RECORDS = Path(tempfile.gettempdir()) / f"mpirep-test-flight-records-{os.getpid()}"
# Variables an MPI process inherits from its launcher; a job started from a process that
# initialised MPI itself must not see them.
LAUNCHER_PREFIXES = ("OMPI_", "PMIX_", "PMI_", "ORTE_", "OPAL_", "HYDRA_", "MPIR_")


@dataclass
class JobResult:
    returncode: int
    output: str
    seconds: float
    timeout_s: float
    started_at: float = 0.0  # time.time() when it started

    @property
    def timed_out(self):
        return self.seconds >= self.timeout_s


def job_env(extra=None, pythonpath=()):
    """The job's environment: `pythonpath` and this checkout first on PYTHONPATH, so that job
    scripts import this checkout's mpirep even where it is not installed."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(LAUNCHER_PREFIXES)}
    env.update(LAUNCH_ENV)
    env.setdefault("MPIREP_FLIGHT_RECORDER_DIR", str(FLIGHT_RECORDS))
    env["PYTHONPATH"] = os.pathsep.join(
        str(p) for p in (*pythonpath, REPO, env.get("PYTHONPATH")) if p)
    env.update(extra or {})
    return env


@functools.lru_cache(maxsize=None)
def local_launch_flags():
    """Open MPI needs leave to put more ranks than cores on this machine; MPICH rejects those flags."""
    version = subprocess.run(["mpirun", "--version"], capture_output=True, text=True).stdout
    return ["--oversubscribe", "--bind-to", "none"] if "Open MPI" in version else []


def mpirun(ranks, args, timeout_s, env=None, pythonpath=()):
    """Runs `mpirun -np ranks <this python> args...` from the checkout's root, killed after
    timeout_s; `env` adds variables, `pythonpath` directories to import from."""
    if shutil.which("mpirun") is None:
        raise RuntimeError("mpirun is not on PATH")
    return _run(["mpirun", *local_launch_flags(), "-np", str(ranks), sys.executable, *map(str, args)],
                timeout_s, env, pythonpath)


def mpirep_run(ranks, flags, args, timeout_s, env=None):
    """Runs `mpirep-run -np ranks flags... <this python> args...` (this checkout's launcher) like
    mpirun above."""
    return _run([sys.executable, "-m", "launch", "-np", str(ranks), *flags, sys.executable, *map(str, args)],
                timeout_s, env, ())


def _run(command, timeout_s, env, pythonpath):
    command = ["timeout", "-k", "10", str(timeout_s), *command]
    started_at = time.time()
    start = time.monotonic()
    process = subprocess.Popen(command, cwd=REPO, env=job_env(env, pythonpath),
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               start_new_session=True)
    try:
        output, _ = process.communicate(timeout=timeout_s + 30)
    except subprocess.TimeoutExpired:  # timeout(1) itself did not end it: kill the whole group
        os.killpg(process.pid, signal.SIGKILL)
        output, _ = process.communicate()
    return JobResult(process.returncode, output, time.monotonic() - start, timeout_s, started_at)


def assert_passed(job, ranks):
    """A job of checks (tests/tf/jobs/harness.py) passed: exit 0, and its closing line reports
    no failed check."""
    summary = re.search(rf"(\d+) checks on {ranks} ranks, (\d+) failures", job.output)
    assert job.returncode == 0 and summary and summary.group(2) == "0", job.output[-6000:]


def build_op_library():
    """Builds the TensorFlow op library, and the XLA kernels where they build, once, before jobs
    whose ranks would otherwise all wait for one of them to build it; returns the op library's
    path."""
    done = subprocess.run([sys.executable, "-m", "mpirep.tensorflow.build"], cwd=REPO,
                          env=job_env(), check=True, timeout=600, stdout=subprocess.PIPE, text=True)
    return Path(done.stdout.strip())
