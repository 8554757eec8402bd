"""Start an mpirun job from a test, under a hard time bound, and collect what it printed."""
import functools
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
LAUNCH_ENV = {
    "OMPI_ALLOW_RUN_AS_ROOT": "1",
    "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
    "OMPI_MCA_btl_tcp_if_include": "lo",
    "OMPI_MCA_oob_tcp_if_include": "lo",
}
# Variables an MPI process inherits from its launcher; a job started from a process that
# initialised MPI itself must not see them.
LAUNCHER_PREFIXES = ("OMPI_", "PMIX_", "PMI_", "ORTE_", "OPAL_", "HYDRA_", "MPIR_")


@dataclass
class JobResult:
    returncode: int
    output: str
    seconds: float
    timeout_s: float

    @property
    def timed_out(self):
        return self.seconds >= self.timeout_s


def job_env(extra=None):
    env = {k: v for k, v in os.environ.items() if not k.startswith(LAUNCHER_PREFIXES)}
    env.update(LAUNCH_ENV)
    # job scripts import this checkout's mpirep even where it is not installed
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH")) if p)
    env.update(extra or {})
    return env


@functools.lru_cache(maxsize=None)
def local_launch_flags():
    """Open MPI needs leave to put more ranks than cores on this machine; MPICH rejects those flags."""
    version = subprocess.run(["mpirun", "--version"], capture_output=True, text=True).stdout
    return ["--oversubscribe", "--bind-to", "none"] if "Open MPI" in version else []


def mpirun(np_, args, timeout_s, env=None):
    """Run `mpirun -np np_ <sys.executable> args...` from the repo root, killed after timeout_s."""
    if shutil.which("mpirun") is None:
        raise RuntimeError("mpirun is not on PATH")
    command = ["timeout", "-k", "10", str(timeout_s), "mpirun", *local_launch_flags(),
               "-np", str(np_), sys.executable, *args]
    start = time.monotonic()
    process = subprocess.Popen(command, cwd=REPO, env=job_env(env), stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        output, _ = process.communicate(timeout=timeout_s + 30)
    except subprocess.TimeoutExpired:  # timeout(1) itself did not end it: kill the whole group
        os.killpg(process.pid, signal.SIGKILL)
        output, _ = process.communicate()
    return JobResult(process.returncode, output, time.monotonic() - start, timeout_s)
