"""mpirep-run --check-build: each part probed in a subprocess, readiness from the parts a
job needs."""
import sys

from mpirep.launch import check_build, mpi_probe


def test_ready_needs_mpi_mpi4py_and_the_core(monkeypatch):
    monkeypatch.setattr(mpi_probe, "probe", lambda environ: mpi_probe.MPIInfo(
        mpi_probe.OPEN_MPI, "4.1.4", "/usr/bin/mpirun"))
    missing = {"TensorFlow", "mpirep TensorFlow bridge"}
    monkeypatch.setattr(check_build, "_PROBES", [(name, name) for name, _ in check_build._PROBES])
    monkeypatch.setattr(check_build, "_probe",
                        lambda code, python: (code not in missing, f"{code} detail"))
    lines, ready = check_build.report({})
    assert ready
    assert "[x] MPI launcher: Open MPI 4.1.4 (/usr/bin/mpirun)" in lines
    assert "[ ] TensorFlow: TensorFlow detail" in lines

    missing.add("mpirep native core")
    assert check_build.report({})[1] is False


def test_a_crashing_import_is_reported_not_raised():
    ok, detail = check_build._probe("import sys; sys.stderr.write('boom\\nlast words\\n'); "
                                    "sys.exit(3)", sys.executable)
    assert (ok, detail) == (False, "last words")
    assert check_build._probe("print('fine')", sys.executable) == (True, "fine")
