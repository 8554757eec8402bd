"""`mpirep-run --check-build`: what this machine offers, each part probed in a subprocess so
that a crashing or slow import (TensorFlow, the native core) cannot take the launcher down."""
import subprocess
import sys

from . import mpi_probe

_PROBES = (
    ("mpi4py", "import mpi4py; mpi4py.rc.initialize = False; from mpi4py import MPI\n"
               "print(mpi4py.__version__, '-', MPI.Get_library_version().splitlines()[0].strip())"),
    ("mpirep native core", "import mpirep._core as core; print('imports from', core.__file__)"),
    ("TensorFlow", "import tensorflow as tf; print(tf.__version__)"),
    ("mpirep TensorFlow bridge", "import mpirep.tensorflow as m; print('imports from', m.__file__)"),
)
PROBE_TIMEOUT = 120


def _probe(code, python):
    try:
        done = subprocess.run([python, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              stdin=subprocess.DEVNULL, text=True, timeout=PROBE_TIMEOUT)
    except subprocess.TimeoutExpired:
        return False, f"no answer after {PROBE_TIMEOUT} s"
    if done.returncode == 0:
        return True, done.stdout.strip()
    lines = done.stderr.strip().splitlines()
    return False, lines[-1] if lines else f"exit status {done.returncode}"


def report(environ, python=sys.executable):
    """The report's lines, and whether everything a job needs (an MPI launcher, mpi4py and the
    native core) is there.  TensorFlow parts are optional: numpy-only jobs run without them."""
    lines = [f"Python: {python}"]
    try:
        info = mpi_probe.probe(environ)
        lines.append(f"[x] MPI launcher: {info.flavour} {info.version} ({info.mpirun})")
        ready = True
    except mpi_probe.MPINotFound as err:
        lines.append(f"[ ] MPI launcher: {err}")
        ready = False
    for name, code in _PROBES:
        ok, detail = _probe(code, python)
        lines.append(f"[{'x' if ok else ' '}] {name}: {detail}")
        if name in ("mpi4py", "mpirep native core"):
            ready = ready and ok
    return lines, ready
