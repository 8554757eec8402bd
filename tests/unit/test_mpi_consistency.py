"""One MPI per process (mpirep/_mpi_consistency.py): the core and mpi4py on one libmpi, started
by that MPI's launcher."""
import json
import subprocess
import sys

import pytest

from mpijob import REPO, job_env
from mpirep._mpi_consistency import LoadedMPI, check_launcher, check_same_library, own_launcher

OPEN_MPI = LoadedMPI("/usr/lib/x86_64-linux-gnu/libmpi.so.40", 0x7f00, "Open MPI v4.1.4")
MPICH = LoadedMPI("/venv/lib/libmpi.so.12", 0x7e00, "MPICH Version: 5.0.2")


def test_one_library_reached_by_two_paths_is_one_library():
    check_same_library(OPEN_MPI, LoadedMPI("/lib/x86_64-linux-gnu/libmpi.so.40", 0x7f00,
                                           "Open MPI v4.1.4"))


def test_two_libraries_name_both_and_the_fix():
    with pytest.raises(ImportError) as raised:
        check_same_library(OPEN_MPI, MPICH)
    message = str(raised.value)
    assert message.startswith("mpirep's core and mpi4py use different MPI libraries, so the "
                              "first MPI call would abort:\n"
                              "  mpirep's core: Open MPI v4.1.4 "
                              "(/usr/lib/x86_64-linux-gnu/libmpi.so.40)\n"
                              "  mpi4py:        MPICH Version: 5.0.2 (/venv/lib/libmpi.so.12)\n"
                              "Use one MPI for both:\n"), message
    assert "MPIREP_MPI_WHEEL=mpich pip install -v --force-reinstall '.[mpich]'" in message
    assert "MPI4PY_LIBMPI=" not in message


def test_a_users_mpi4py_libmpi_is_named_as_the_cause():
    with pytest.raises(ImportError, match=r"\nMPI4PY_LIBMPI=/venv/lib/libmpi.so.12 points mpi4py "
                                          "away from the library mpirep was built against.\n"):
        check_same_library(OPEN_MPI, MPICH, "/venv/lib/libmpi.so.12")


@pytest.mark.parametrize("variable,launcher", [
    ("OMPI_COMM_WORLD_SIZE", "Open MPI's mpirun"),
    ("PMI_SIZE", "an MPICH-style launcher (Hydra's mpiexec, or srun)")])
def test_ranks_that_each_see_a_world_of_one_were_started_by_another_mpi(variable, launcher):
    with pytest.raises(RuntimeError) as raised:
        check_launcher(1, OPEN_MPI, {variable: "3"})
    assert str(raised.value) == (
        f"this process was started as one of 3 ranks ({variable}=3, set by {launcher}), but its "
        "MPI, Open MPI v4.1.4 (/usr/lib/x86_64-linux-gnu/libmpi.so.40), sees only itself: the "
        "job was started by another MPI's launcher. Start it with the mpirun or mpiexec of "
        "Open MPI v4.1.4.")


def test_a_matching_launcher_or_a_single_process_passes():
    check_launcher(3, OPEN_MPI, {"OMPI_COMM_WORLD_SIZE": "3"})
    check_launcher(1, OPEN_MPI, {"OMPI_COMM_WORLD_SIZE": "1", "PMI_SIZE": "1"})
    check_launcher(1, OPEN_MPI, {})


def test_the_launcher_beside_a_wheels_library_is_named(tmp_path):
    (tmp_path / "lib").mkdir()
    (tmp_path / "bin").mkdir()
    library = tmp_path / "lib" / "libmpi.so.12"
    library.write_bytes(b"")
    mpiexec = tmp_path / "bin" / "mpiexec"
    mpiexec.write_text("#!/bin/sh\n")
    mpiexec.chmod(0o755)
    assert own_launcher(LoadedMPI(str(library), 1, "MPICH Version: 5.0.2")) == str(mpiexec)


def test_this_installation_loads_one_libmpi():
    """The real check on this machine's core and mpi4py, in a process that leaves MPI alone."""
    code = ("import json, mpi4py; mpi4py.rc.initialize = False\n"
            "from mpi4py import MPI\n"
            "from mpirep import _core_loader, _mpi_consistency as c\n"
            "core = _core_loader.core_mpi(); other = c.loaded_by(MPI.__file__)\n"
            "print(json.dumps([core.path, core.base, core.version, other.base, "
            "MPI.Get_library_version()]))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO,
                          env=job_env(), timeout=60)
    assert done.returncode == 0, done.stderr
    path, base, version, mpi4py_base, mpi4py_version = json.loads(done.stdout)
    assert base == mpi4py_base and "libmpi" in path
    assert mpi4py_version.startswith(version.split()[0]), (version, mpi4py_version)
