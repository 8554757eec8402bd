"""Switching MPI in one checkout, as a user of a cluster does (module swap, a wheel in a venv):
each reinstall gives a core linked to the new MPI, never the previous build's core (issue 44),
and jobs run on it. Then a fresh venv with the `impi` extra, as the docs tell a user, whose
build isolation fetches Intel MPI's wheels. Everything comes from PyPI through pip's cache.

Open MPI is Debian's (dev/setup installs it); the Intel MPI and MPICH wheels install into the
venvs only, never onto the machine."""
import shutil

import pytest

from installs import (core_check, core_of, library_version, linked_libmpi,
                      make_venv, pip, run, RUNTIME)

SYSTEM_MPICC = "/usr/bin/mpicc"

pytestmark = pytest.mark.skipif(shutil.which("mpicc", path="/usr/bin") is None,
                                reason="needs Debian's Open MPI (dev/setup installs it)")


def reinstall(python, checkout, **env):
    """`pip install --force-reinstall .` of the checkout into the venv, building with the venv's
    setuptools (--no-build-isolation) against the MPI that ``env`` names; returns the build's
    log."""
    done = pip(python, "-v", "--force-reinstall", "--no-deps", "--no-build-isolation", checkout,
               env=env)
    return done.stdout


def test_each_reinstall_links_the_new_mpi(tmp_path, checkout):
    python = make_venv(tmp_path / "venv")
    venv_lib = (tmp_path / "venv" / "lib").resolve()
    pip(python, *RUNTIME)

    reinstall(python, checkout, MPIREP_MPICC=SYSTEM_MPICC)
    libmpi = linked_libmpi(core_of(python))
    assert str(libmpi).startswith("/usr/lib/"), libmpi
    assert library_version(python, libmpi).startswith("Open MPI v")
    assert all(mpi.startswith("Open MPI v") for mpi in core_check(
        [tmp_path / "venv" / "bin" / "mpirep-run", "-np", "2", python], 2,
        env={"MPIREP_MPIRUN": "/usr/bin/mpirun"}))

    pip(python, "impi-devel")  # brings impi-rt, its runtime
    log = reinstall(python, checkout, MPIREP_MPI_WHEEL="impi")
    assert "from the impi-devel" in log and "and was compiled with Intel MPI" in log, log[-3000:]
    libmpi = linked_libmpi(core_of(python))
    assert libmpi.parent == venv_lib
    assert library_version(python, libmpi).startswith("Intel(R) MPI Library")
    assert all(mpi.startswith("Intel(R) MPI Library") for mpi in core_check(
        [tmp_path / "venv" / "bin" / "mpirep-run", "-np", "2", python], 2))

    # The mpich wheel puts its own libmpi.so.12 where Intel's was: one MPI wheel at a time.
    assert run([python, "-m", "pip", "uninstall", "-y", "impi-devel",
                          "impi-rt"]).returncode == 0
    pip(python, "mpich")
    log = reinstall(python, checkout, MPIREP_MPI_WHEEL="mpich")
    assert "from the mpich" in log and "and was compiled with MPICH" in log, log[-3000:]
    libmpi = linked_libmpi(core_of(python))
    assert libmpi.parent == venv_lib
    assert library_version(python, libmpi).startswith("MPICH Version")
    assert all(mpi.startswith("MPICH Version") for mpi in core_check(
        [tmp_path / "venv" / "bin" / "mpirep-run", "-np", "2", python], 2))


def test_a_fresh_venv_with_the_impi_extra(tmp_path, checkout):
    """`MPIREP_MPI_WHEEL=impi pip install '.[impi]'` with pip's build isolation: jobs at 3 ranks
    under Intel's mpirun (the venv activated: its bin/ first on PATH), at 2 through mpirep-run
    (not activated), and --check-build names the MPI the build recorded."""
    python = make_venv(tmp_path / "venv")
    bin_dir = tmp_path / "venv" / "bin"
    done = pip(python, "-v", f"{checkout}[impi]", env={"MPIREP_MPI_WHEEL": "impi"})
    assert "and was compiled with Intel MPI" in done.stdout, done.stdout[-3000:]
    libmpi = linked_libmpi(core_of(python))
    assert libmpi.parent == (tmp_path / "venv" / "lib").resolve()
    activated = {"PATH": f"{bin_dir}:/usr/local/bin:/usr/bin:/bin"}
    assert all(mpi.startswith("Intel(R) MPI Library") for mpi in core_check(
        [bin_dir / "mpirun", "-np", "3", python], 3, env=activated))
    assert all(mpi.startswith("Intel(R) MPI Library") for mpi in core_check(
        [bin_dir / "mpirep-run", "-np", "2", python], 2))
    report = run([bin_dir / "mpirep-run", "--check-build"], cwd="/")
    assert "[x] MPI launcher: Intel MPI" in report.stdout, report.stdout
    assert "[x] core built against: Intel(R) MPI Library" in report.stdout, report.stdout
    assert "from the impi-devel" in report.stdout and "the same MPI loads now" in report.stdout
