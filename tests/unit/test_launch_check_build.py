"""mpirep-run --check-build: each part probed in a subprocess, readiness from the parts a
job needs, and whether the launcher and the core are one MPI."""
import sys

import pytest

from mpirep.launch import check_build, mpi_probe

OPEN_MPI_LAUNCHER = mpi_probe.MPIInfo(mpi_probe.OPEN_MPI, "4.1.4", "/usr/bin/mpirun")
CORE_ON_OPEN_MPI = ("/venv/mpirep/_core.so on Open MPI v4.1.4 "
                    "(/usr/lib/x86_64-linux-gnu/libmpi.so.40) (mpi4py loads it too)")
CORE_ON_MPICH = "/venv/mpirep/_core.so on MPICH Version: 5.0.2 (/venv/lib/libmpi.so.12) (mpi4py loads it too)"
BUILT_ON_OPEN_MPI = ("Open MPI v4.1.4 (libmpi.so.40), mpi.h of Open MPI 4.1.4 "
                     "(/usr/lib/x86_64-linux-gnu/openmpi/include/mpi.h), by /usr/bin/mpicc")


@pytest.fixture
def probes(monkeypatch):
    """Every probe answers from a table: the part it names -> (ok, detail)."""
    answers = {check_build._MPI4PY: (True, "4.1.2 - Open MPI v4.1.4"),
               check_build._CORE: (True, CORE_ON_OPEN_MPI),
               check_build._BUILT_WITH: (True, BUILT_ON_OPEN_MPI),
               check_build._TENSORFLOW: (True, "2.21.0"),
               check_build._BRIDGE: (True, "imports from /venv/mpirep/tensorflow/__init__.py"),
               check_build._OP_LIBRARY_CACHED: (False, "not built yet"),
               check_build._OP_LIBRARY_BUILD: (True, "/cache/tf-2.21.0-0123/mpirep_tf_ops.so"),
               check_build._KERAS_VERSIONS: (True, "('2.21.0', '3.15.1', '2.21.0')")}
    monkeypatch.setattr(mpi_probe, "probe", lambda environ: OPEN_MPI_LAUNCHER)
    monkeypatch.setattr(check_build, "_probe",
                        lambda code, python, options=(), env=None, timeout=0: answers[code])
    return answers


def test_ready_needs_mpi_mpi4py_and_the_core(probes):
    lines, ready = check_build.report({})
    assert ready
    assert lines[1:] == [
        "[x] MPI launcher: Open MPI 4.1.4 (/usr/bin/mpirun)",
        "[x] mpi4py: 4.1.2 - Open MPI v4.1.4",
        f"[x] mpirep native core: {CORE_ON_OPEN_MPI}",
        f"[x] core built against: {BUILT_ON_OPEN_MPI}; the same MPI loads now",
        "[x] MPI launcher and core: one MPI, Open MPI 4.1.4",
        "[x] TensorFlow: 2.21.0",
        "[x] mpirep TensorFlow bridge: imports from /venv/mpirep/tensorflow/__init__.py",
        "[ ] TensorFlow op library: not built yet",
        "[x] Keras 2 scripts: tf.keras is Keras 3.15.1; tf_keras 2.21.0 runs Keras 2 scripts, "
        "as Horovod's are, under mpirep-run --keras2 (docs/porting.md)"]
    probes[check_build._CORE] = (False, "ImportError: line one\nline two")
    lines, ready = check_build.report({})
    assert not ready
    assert "[ ] mpirep native core: ImportError: line one\n    line two" in lines
    assert not any(line.startswith("[x] MPI launcher and core") for line in lines)


def test_the_recorded_mpi_is_shown_beside_the_one_loaded_now(probes):
    """A core built against one libmpi.so.40 that finds another at run time (a module swapped
    since the build) is not ready, and the report names both; so is a core with no record."""
    probes[check_build._BUILT_WITH] = (True, BUILT_ON_OPEN_MPI.replace("v4.1.4", "v4.0.3"))
    lines, ready = check_build.report({})
    assert not ready
    assert ("[ ] core built against: Open MPI v4.0.3 (libmpi.so.40), mpi.h of Open MPI 4.1.4 "
            "(/usr/lib/x86_64-linux-gnu/openmpi/include/mpi.h), by /usr/bin/mpicc; but now it "
            "loads Open MPI v4.1.4 (/usr/lib/x86_64-linux-gnu/libmpi.so.40): the MPI found at "
            "run time is not the one the core was built against.") in " ".join(lines)
    probes[check_build._BUILT_WITH] = (False, "not recorded: the core predates the record")
    lines, ready = check_build.report({})
    assert not ready
    assert "[ ] core built against: not recorded: the core predates the record" in lines


def test_build_tf_ops_builds_and_says_so_first(probes):
    said = []
    lines, ready = check_build.report({}, build_tf_ops=True, progress=said.append)
    assert lines[-2] == "[x] TensorFlow op library: /cache/tf-2.21.0-0123/mpirep_tf_ops.so"
    assert said == ["building the TensorFlow op library and its XLA kernels unless they are "
                    "built (about a minute and a half)"]
    probes[check_build._TENSORFLOW] = (False, "ModuleNotFoundError: No module named 'tensorflow'")
    assert not any("op library" in line for line in check_build.report({}, build_tf_ops=True)[0])


def test_a_launcher_of_another_mpi_is_not_ready(probes):
    probes[check_build._CORE] = (True, CORE_ON_MPICH)
    lines, ready = check_build.report({})
    assert not ready
    assert ("[ ] MPI launcher and core: /usr/bin/mpirun is Open MPI 4.1.4, but the core uses "
            "MPICH Version: 5.0.2 (/venv/lib/libmpi.so.12): start jobs with that MPI's mpirun "
            "or mpiexec (set MPIREP_MPIRUN to it)") in lines


@pytest.mark.parametrize("launcher,core,same", [
    (OPEN_MPI_LAUNCHER, CORE_ON_OPEN_MPI, True),
    (mpi_probe.MPIInfo(mpi_probe.OPEN_MPI, "5.0.11", "/venv/bin/mpirun"), CORE_ON_OPEN_MPI, False),
    (mpi_probe.MPIInfo(mpi_probe.MPICH, "5.0.2", "/venv/bin/mpiexec"), CORE_ON_MPICH, True),
    (mpi_probe.MPIInfo(mpi_probe.MPICH, "", "/opt/bin/mpiexec"), CORE_ON_MPICH, True),
    (mpi_probe.MPIInfo(mpi_probe.INTEL_MPI, "2021.10", "/opt/intel/bin/mpirun"), CORE_ON_MPICH,
     False),
])
def test_launcher_and_core_are_compared_by_flavour_and_major_version(launcher, core, same):
    assert check_build.launcher_matches_core(launcher, core)[0] is same


def test_a_probe_reports_the_whole_message_of_its_exception():
    assert check_build._probe("raise ImportError('first\\nsecond')", sys.executable) == \
        (False, "ImportError: first\nsecond")
    assert check_build._probe("sys.exit('plainly said')", sys.executable) == (False, "plainly said")


def test_a_crashing_probe_is_reported_not_raised():
    ok, detail = check_build._probe("import os; os.write(2, b'boom\\nlast words\\n'); "
                                    "os._exit(3)", sys.executable)
    assert (ok, detail) == (False, "last words")
    assert check_build._probe("print('fine')", sys.executable) == (True, "fine")


def test_the_mpi4py_line_has_no_nul_byte(tmp_path):
    """Open MPI 5's MPI_Get_library_version ends with a NUL byte, which a terminal hides and
    grep takes for a binary file; an mpi4py stand-in returns such a string."""
    fake = tmp_path / "mpi4py"
    fake.mkdir()
    (fake / "__init__.py").write_text("import types\n__version__ = '9.9'\n"
                                      "rc = types.SimpleNamespace()\n")
    (fake / "MPI.py").write_text("def Get_library_version():\n"
                                 "    return 'Open MPI v5.0.11, package: Open MPI\\0'\n")
    env = {"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin"}
    assert check_build._probe(check_build._MPI4PY, sys.executable, env=env) == \
        (True, "9.9 - Open MPI v5.0.11, package: Open MPI")
