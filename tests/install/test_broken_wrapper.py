"""A compiler wrapper that names directories that do not exist (an Intel MPI wrapper whose
prefix was never filled in, a module of an MPI that was removed) fails the install with a
message that says so, and leaves no core: the compiler and linker would otherwise take mpi.h
and libmpi from another MPI on the machine (issue 44)."""
import pytest

from installs import make_venv, pip, run

SHOWN = {
    "intel-placeholder": ('-I"I_MPI_SUBSTITUTE_INSTALLDIR/include" '
                          '-L"I_MPI_SUBSTITUTE_INSTALLDIR/lib" -lmpi',
                          "prints the placeholder I_MPI_SUBSTITUTE_INSTALLDIR for its directories"),
    "removed-mpi": ("-I/opt/removed-mpi/include -L/opt/removed-mpi/lib -lmpi",
                    "names directories that do not exist: /opt/removed-mpi/include, "
                    "/opt/removed-mpi/lib."),
}


@pytest.fixture(scope="module")
def venv(tmp_path_factory):
    python = make_venv(tmp_path_factory.mktemp("broken") / "venv")
    pip(python, "setuptools>=64", "wheel")
    return python


@pytest.mark.parametrize("case", sorted(SHOWN))
def test_the_install_fails_and_says_why(tmp_path, checkout, venv, case):
    shown, message = SHOWN[case]
    mpicc = tmp_path / "mpicc"
    mpicc.write_text(f"#!/bin/sh\n[ \"$1\" = -show ] && echo 'gcc {shown}' && exit 0\nexit 1\n")
    mpicc.chmod(0o755)
    done = pip(venv, "--no-deps", "--no-build-isolation", checkout,
               env={"MPIREP_MPICC": str(mpicc)}, check=False)
    assert done.returncode != 0
    assert f"{mpicc} (the MPI compiler wrapper chosen because MPIREP_MPICC={mpicc}) " \
           f"{message}" in " ".join(done.stdout.split()), done.stdout[-4000:]
    assert run([venv, "-m", "pip", "show", "mpirep"]).returncode != 0
