"""Installing mpirep as a user does, into venvs of the test's own, from a copy of this checkout
(tests/install, and the Slurm tests of an MPICH core in tests/cluster): pip with its cache
(wheels from PyPI: mpi4py, numpy, the MPI wheels), each step under a hard time limit. Then what
the installed core links (readelf, ldd), which MPI that library is, and the core check."""
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from mpijob import LAUNCH_ENV, REPO

CORE_CHECK = REPO / "tests" / "install" / "jobs" / "core_check.py"
# What a venv needs besides MPI to build mpirep without pip's build isolation, and to run it.
RUNTIME = ["numpy", "mpi4py", "ml_dtypes", "setuptools>=64", "wheel"]
PIP_TIMEOUT = 420  # a build with a cold pip cache, on a loaded machine
JOB_TIMEOUT = 120
# Reads a libmpi's MPI_Get_library_version, by the function the build and mpirep use.
VERSION_OF = ("import runpy, sys\n"
              "print(runpy.run_path(sys.argv[1])['library_version'](sys.argv[2]))")


def copy_checkout(destination: Path) -> Path:
    """The checkout's files as git sees them (tracked, and new ones not ignored), without its
    build/ or venvs: a checkout of the test's own, built in place."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                            cwd=REPO, capture_output=True, check=True).stdout.decode()
    for name in filter(None, listed.split("\0")):
        source = REPO / name
        if source.is_file():
            (destination / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, destination / name)
    return destination


def make_venv(path: Path) -> Path:
    """A new venv (of the interpreter the tests run on); returns its python."""
    base = getattr(sys, "_base_executable", sys.executable)
    subprocess.run([base, "-m", "venv", str(path)], check=True, timeout=120)
    return path / "bin" / "python"


def run(argv, env=None, timeout=PIP_TIMEOUT, cwd=None):
    """Runs ``argv`` to the end, its output collected; the environment is this one without
    variables of an MPI job, plus ``env``."""
    environ = {name: value for name, value in os.environ.items()
               if not name.startswith(("MPIREP_", "I_MPI_", "PMI_", "OMPI_COMM", "PMIX_"))}
    environ.update(LAUNCH_ENV)
    environ.update(env or {})
    return subprocess.run([str(arg) for arg in argv], env=environ, cwd=cwd, timeout=timeout,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def pip(python: Path, *args, env=None, check=True):
    done = run([python, "-m", "pip", "install", "--disable-pip-version-check", *args], env=env)
    if check:
        assert done.returncode == 0, f"pip install {' '.join(map(str, args))} failed:\n" \
                                     f"{done.stdout[-6000:]}"
    return done


def core_of(python: Path) -> Path:
    """The installed mpirep._core of the venv of ``python`` (found without importing it)."""
    site = run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['platlib'])"])
    found = list((Path(site.stdout.strip()) / "mpirep").glob("_core.*.so"))
    assert len(found) == 1, found
    return found[0]


def linked_libmpi(core: Path) -> Path:
    """The libmpi the core needs (readelf's NEEDED), and the file ldd resolves it to."""
    needed = subprocess.run(["readelf", "-d", core], capture_output=True, text=True,
                            check=True).stdout
    sonames = re.findall(r"\(NEEDED\).*\[(libmpi\w*\.so[.\d]*)\]", needed)
    assert len(sonames) == 1, needed
    resolved = subprocess.run(["ldd", core], capture_output=True, text=True, check=True).stdout
    found = re.search(rf"^\s*{re.escape(sonames[0])} => (/\S+)", resolved, re.M)
    assert found, f"{core} needs {sonames[0]}, which ldd does not resolve:\n{resolved}"
    return Path(found.group(1)).resolve()


def library_version(python: Path, libmpi: Path) -> str:
    done = run([python, "-c", VERSION_OF, REPO / "mpirep" / "_mpi_consistency.py", libmpi],
               timeout=60)
    assert done.returncode == 0, done.stdout
    return done.stdout.strip()


def core_check(argv, ranks: int, env=None):
    """The core check at ``ranks`` ranks through the launcher ``argv`` (up to the program):
    every rank passes, and each names the MPI its core uses. Returns those names."""
    job = run([*argv, CORE_CHECK], env=env,
              timeout=JOB_TIMEOUT, cwd="/")
    # a rank's line may still meet another's in the launcher's output before its newline does
    passed = re.findall(r"core check passed: rank (\d+) of (\d+), (.*?)(?=core check|$)",
                        job.stdout, re.M)
    assert job.returncode == 0 and sorted(int(rank) for rank, _, _ in passed) == \
        list(range(ranks)) and {size for _, size, _ in passed} == {str(ranks)}, job.stdout[-6000:]
    return {mpi for _, _, mpi in passed}
