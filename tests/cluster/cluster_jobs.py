"""Helpers of the cluster tests: run jobs under a hard time bound, find the launcher, read
the lines rank_check.py prints and check the topology they report."""
import os
import pathlib
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parents[1]
ON_HOST = str(REPO / "dev" / "cluster" / "on-host")
# Where the emulated hosts' ssh config lives and the subnet they share: run.sh takes both from
# dev/cluster/lib.sh and sets them when the hosts are up.
SSH_CONFIG = os.environ.get("MPIREP_HOSTS_SSH_CONFIG", "")
NET = os.environ.get("MPIREP_HOSTS_SUBNET", "")

# absolute but not resolved: a virtual environment's bin/python must stay a venv path
PY = os.environ.get("PYTHON") or sys.executable
PY = PY if os.path.isabs(PY) else (shutil.which(PY) or PY)
# `python -m mpi4py`: an uncaught exception in a rank becomes MPI_Abort instead of a hang
RANK_CMD = [PY, "-m", "mpi4py", str(HERE / "rank_check.py")]

# Root may run Open MPI only with these; its TCP stays on loopback unless a test says otherwise.
BASE_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
            "OMPI_MCA_btl_tcp_if_include": "lo", "OMPI_MCA_oob_tcp_if_include": "lo"}
ON_NET = {"OMPI_MCA_btl_tcp_if_include": NET, "OMPI_MCA_oob_tcp_if_include": NET}
# Where ranks write flight records, rather than the checkout (benchmarks/ runs these jobs too,
# without tests/ on its path).
FLIGHT_RECORDS = pathlib.Path(tempfile.gettempdir()) / f"mpirep-cluster-flight-records-{os.getpid()}"

RANK_LINE = re.compile(r"^RANK (\d+)/(\d+) host=(\S+) local=(\d+)/(\d+) cross=(\d+)/(\d+) "
                       r"allreduce_ok=(\w+) backend=(\S+) slurm_procid=(\S+)$", re.M)


def launcher_cmd():
    """mpirep-run as installed beside PY, else this checkout's launch/ package run by PY."""
    installed = os.path.join(os.path.dirname(PY), "mpirep-run")
    if os.access(installed, os.X_OK):
        return [installed]
    # sys.path is appended to, not prepended: an installed mpirep keeps precedence for ranks
    return [PY, "-c", f"import runpy, sys; sys.path.append({str(REPO)!r}); "
                      "runpy.run_module('launch', run_name='__main__', alter_sys=True)"]


def job_env(extra=None):
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}   # no stray job
    env.update(BASE_ENV)
    env.setdefault("MPIREP_FLIGHT_RECORDER_DIR", str(FLIGHT_RECORDS))   # not the checkout
    env.update(extra or {})
    return env


def start(cmd, env=None, **kwargs):
    return subprocess.Popen(cmd, env=job_env(env), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True, **kwargs)


def finish(proc, timeout):
    """Wait for proc; past the timeout TERM its process group, then KILL it, and fail."""
    try:
        out, err = proc.communicate(timeout=timeout)
        return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
    except subprocess.TimeoutExpired:
        pass
    out = err = ""
    for sig, wait in ((signal.SIGTERM, 10), (signal.SIGKILL, 5)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            break
        try:
            out, err = proc.communicate(timeout=wait)
            break
        except subprocess.TimeoutExpired:
            continue
    raise AssertionError(f"timed out after {timeout}s: {proc.args}\nstdout:\n{out}\nstderr:\n{err}")


def run(cmd, env=None, timeout=90, check=True, **kwargs):
    done = finish(start(cmd, env, **kwargs), timeout)
    if check and done.returncode != 0:
        raise AssertionError(f"rc={done.returncode}: {cmd}\nstdout:\n{done.stdout}\n"
                             f"stderr:\n{done.stderr}")
    return done


def check_ranks(text, size, hosts=None):
    """Each rank 0..size-1 reported once, a right allreduce, one backend (mpirep's core or
    mpi4py) on all ranks, and the topology Horovod defines:
    local ranks number a host's ranks in rank order; cross ranks number the ranks that share
    a local rank, in rank order.  Returns {rank: fields}."""
    lines = {int(m[0]): m for m in RANK_LINE.findall(text)}
    assert sorted(lines) == list(range(size)), text
    assert all(int(m[1]) == size and m[7] == "True" for m in lines.values()), text
    assert len({m[8] for m in lines.values()}) == 1, "ranks used different backends:\n" + text
    by_host = {}
    for rank in sorted(lines):
        by_host.setdefault(lines[rank][2], []).append(rank)
    if hosts is not None:
        assert set(by_host) == set(hosts), text
    by_local = {}
    for host_ranks in by_host.values():
        for local_rank, rank in enumerate(host_ranks):
            assert lines[rank][3:5] == (str(local_rank), str(len(host_ranks))), text
            by_local.setdefault(local_rank, []).append(rank)
    for ranks in by_local.values():
        for cross_rank, rank in enumerate(sorted(ranks)):
            assert lines[rank][5:7] == (str(cross_rank), str(len(ranks))), text
    return lines


def job_state(jobid, env):
    """(state, `scontrol show job` line) of a Slurm job; the state is None while it runs."""
    info = run(["scontrol", "show", "job", "-o", jobid], env, timeout=30, check=False).stdout
    state = re.search(r"\bJobState=(\S+)", info)
    if state and state.group(1) not in ("PENDING", "CONFIGURING", "RUNNING", "COMPLETING"):
        return state.group(1), info
    return None, info


def wait_job(jobid, env, timeout=120):
    """Poll the Slurm job until it ends (sbatch --wait only looks every ~10 s)."""
    give_up_at = time.monotonic() + timeout
    while time.monotonic() < give_up_at:
        state, info = job_state(jobid, env)
        if state:
            return state, info
        time.sleep(0.2)
    run(["scancel", jobid], env, timeout=30, check=False)
    raise AssertionError(f"Slurm job {jobid} not finished after {timeout}s")
