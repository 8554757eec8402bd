"""`mpirep-run --check-build`: what this machine offers, each part probed in a subprocess so
that a crashing or slow import (TensorFlow, the native core) cannot take the launcher down."""
import ast
import re
import subprocess
import sys

from . import keras2, mpi_probe

# A probe's own failure: the exception's whole message (or a SystemExit's text), after this
# marker on stdout.
_FAILED = "mpirep-probe-failed: "
_WRAPPER = """\
import sys
try:
    exec(compile({code!r}, "<probe>", "exec"))
except BaseException as error:
    if isinstance(error, SystemExit) and not isinstance(error.code, str):
        raise
    said = error.code if isinstance(error, SystemExit) else type(error).__name__ + ": " + str(error)
    print({marker!r} + said)
    sys.exit(1)
"""
# Open MPI 5 ends its library version with a NUL byte.
_MPI4PY = ("import mpi4py; mpi4py.rc.initialize = False; from mpi4py import MPI\n"
           "print(mpi4py.__version__, '-',"
           " MPI.Get_library_version().replace('\\0', '').splitlines()[0].strip())")
# Loads the core without starting MPI; loading checks that it and mpi4py share one libmpi.
_CORE = ("import mpi4py; mpi4py.rc.initialize = False\n"
         "from mpirep import _core_loader\n"
         "print(_core_loader.core().__file__, 'on', _core_loader.core_mpi(), '(mpi4py loads it too)')")
# What the build recorded (buildtools/mpi_checks.py), one line, the library's version first.
_BUILT_WITH = (
    "from mpirep import _mpi_library\n"
    "built = getattr(_mpi_library, 'BUILT_WITH', None)\n"
    "if built is None:\n"
    "    sys.exit('not recorded: the core predates the record; reinstall mpirep to make one')\n"
    "wheel = f\" from the {built['wheel']} wheel\" if built['wheel'] else ''\n"
    "print(f\"{built['library_version']} ({built['soname']}{wheel}), mpi.h of \"\n"
    "      f\"{built['mpi_h']}, by {built['wrapper']}\")")
_TENSORFLOW = "import tensorflow as tf; print(tf.__version__)"
_BRIDGE = "import mpirep.tensorflow as m; print('imports from', m.__file__)"
# The versions, from metadata: importing them would pick one Keras
_KERAS_VERSIONS = ("from importlib import metadata\n"
                   "def version(name):\n"
                   "    try:\n"
                   "        return metadata.version(name)\n"
                   "    except metadata.PackageNotFoundError:\n"
                   "        return ''\n"
                   "print(repr(tuple(version(n) for n in ('tensorflow', 'keras', 'tf_keras'))))")
_OP_LIBRARY_CACHED = (
    "from mpirep.tensorflow import _op_library\n"
    "library = _op_library.cached_library()\n"
    "if library is None:\n"
    "    sys.exit('not built yet for this TensorFlow; the first TensorFlow collective compiles "
    "it (about half a minute), or build it now with --build-tf-ops')\n"
    "print(library)")
# The XLA kernels too, where this TensorFlow allows: a failure is remembered in the cache and
# said when a jit-compiled function needs them (docs/tensorflow.md, "XLA and GPU nodes").
_OP_LIBRARY_BUILD = ("from mpirep.tensorflow import _op_library\n"
                     "print(_op_library.library_path())\n"
                     "try:\n"
                     "    _op_library.library_path(_op_library.XLA)\n"
                     "except _op_library.BuildError:\n"
                     "    pass")
PROBE_TIMEOUT = 120
BUILD_TIMEOUT = 900  # importing TensorFlow and compiling, on a busy login node


def _probe(code, python, options=(), env=None, timeout=PROBE_TIMEOUT):
    """(ok, detail): what ``code`` printed, or why it failed: its exception's message, or else
    the last line of its stderr."""
    wrapped = _WRAPPER.format(code="import sys\n" + code, marker=_FAILED)
    try:
        done = subprocess.run([python, *options, "-c", wrapped], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
                              timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return False, f"no answer after {timeout} s"
    if done.returncode == 0:
        return True, done.stdout.strip()
    if _FAILED in done.stdout:
        return False, done.stdout.split(_FAILED, 1)[1].strip()
    lines = (done.stderr.strip() or done.stdout.strip()).splitlines()
    return False, lines[-1] if lines else f"exit status {done.returncode}"


def probe_core(python, options=(), env=None):
    """Whether mpirep's native core loads (sharing one libmpi with mpi4py), and from where."""
    return _probe(_CORE, python, options, env)


def _op_library_line(python, build, progress):
    """The TensorFlow op library: built (now, if ``build``) or not yet."""
    if not build:
        return _probe(_OP_LIBRARY_CACHED, python)
    progress("building the TensorFlow op library and its XLA kernels unless they are built "
             "(about a minute and a half)")
    ok, detail = _probe(_OP_LIBRARY_BUILD, python, timeout=BUILD_TIMEOUT)
    if ok:
        return ok, detail
    return ok, "could not be built: " + "\n".join(detail.splitlines()[-12:])


def built_matches_loaded(built_detail, core_detail):
    """(ok, detail): the MPI the core was built against, as the build recorded it, beside the
    one it loads now. They differ when the library the core's soname resolves to has changed
    since the build (another module loaded, LD_LIBRARY_PATH)."""
    built_version = built_detail.split(" (", 1)[0]
    loaded = core_detail.split(" on ", 1)[-1].replace(" (mpi4py loads it too)", "")
    if built_version == loaded.split(" (", 1)[0]:
        return True, f"{built_detail}; the same MPI loads now"
    return False, (f"{built_detail}; but now it loads {loaded}: the MPI found at run time is not "
                   "the one the core was built against. Start jobs with the MPI of the build, or "
                   "rebuild against this one: `pip install -v --force-reinstall .` in mpirep's "
                   "source (docs/install.md)")


def launcher_matches_core(launcher, core_detail):
    """(ok, detail): whether the MPI launcher and the core's libmpi are one MPI (flavour and
    major version), from the launcher's MPIInfo and what the core probe printed."""
    core_mpi = core_detail.split(" on ", 1)[-1]
    flavour = next((name for name, needle in ((mpi_probe.OPEN_MPI, "Open MPI"),
                                              (mpi_probe.INTEL_MPI, "Intel(R) MPI"),
                                              (mpi_probe.MPICH, "MPICH")) if needle in core_mpi),
                   None)
    major = re.search(r"(\d+)\.\d+", core_mpi)
    same = flavour == launcher.flavour and (
        not major or not launcher.version or launcher.version.split(".")[0] == major.group(1))
    if same:
        return True, f"one MPI, {launcher.flavour} {launcher.version}"
    return False, (f"{launcher.mpirun} is {launcher.flavour} {launcher.version}, but the core "
                   f"uses {core_mpi.replace(' (mpi4py loads it too)', '')}: start jobs with that "
                   "MPI's mpirun or mpiexec (set MPIREP_MPIRUN to it)")


def report(environ, python=sys.executable, build_tf_ops=False, progress=lambda text: None):
    """The report's lines, and whether everything a job needs (an MPI launcher, mpi4py and the
    native core, of one MPI) is there. TensorFlow parts are optional: numpy-only jobs run
    without them. ``build_tf_ops`` builds the TensorFlow op library if it is not built yet,
    saying so first through ``progress``."""
    lines = [f"Python: {python}"]
    try:
        launcher = mpi_probe.probe(environ)
        lines.append(f"[x] MPI launcher: {launcher.flavour} {launcher.version} ({launcher.mpirun})")
    except mpi_probe.MPINotFound as err:
        launcher = None
        lines.append(f"[ ] MPI launcher: {err}")
    checks = [("mpi4py", *_probe(_MPI4PY, python)),
              ("mpirep native core", *probe_core(python))]
    core_ok, core_detail = checks[1][1:]
    if core_ok:
        built_ok, built_detail = _probe(_BUILT_WITH, python)
        checks.append(("core built against",
                       *(built_matches_loaded(built_detail, core_detail) if built_ok
                         else (built_ok, built_detail))))
    if launcher and core_ok:
        checks.append(("MPI launcher and core", *launcher_matches_core(launcher, core_detail)))
    ready = launcher is not None and all(ok for _, ok, _ in checks)
    tensorflow = _probe(_TENSORFLOW, python)
    checks.append(("TensorFlow", *tensorflow))
    checks.append(("mpirep TensorFlow bridge", *_probe(_BRIDGE, python)))
    if tensorflow[0]:
        checks.append(("TensorFlow op library",
                       *_op_library_line(python, build_tf_ops, progress)))
        versions_ok, versions = _probe(_KERAS_VERSIONS, python)
        if versions_ok:
            checks.append(("Keras 2 scripts", *keras2.describe(*ast.literal_eval(versions))))
    for name, ok, detail in checks:
        text = detail.replace("\n", "\n    ")
        lines.append(f"[{'x' if ok else ' '}] {name}: {text}")
    return lines, ready
