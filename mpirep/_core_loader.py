"""Loads the native core on first use, never at ``import mpirep`` (the launcher imports this
package and must not start MPI).

mpi4py is imported first so that MPI is initialised with the thread level the core needs, and
it is pointed at the libmpi the core was built against (recorded by the build in
``mpirep/_mpi_library.py``), so that both load the same library even where several MPIs are
installed. Then the core is checked against mpi4py (mpirep/_mpi_consistency.py): one libmpi,
started by its own launcher. A core that is missing altogether is explained
(mpirep/_missing_core.py).
"""

import importlib.util
import os

from mpirep import _missing_core, _mpi_consistency

_core = None
_core_mpi = None


def core():
    global _core, _core_mpi
    if _core is None:
        _core, _core_mpi = _load()
    return _core


def core_mpi():
    """The libmpi the core calls (a _mpi_consistency.LoadedMPI); loads the core."""
    core()
    return _core_mpi


def _load():
    try:
        from mpirep._mpi_library import LIBMPI
    except ImportError:  # a build that recorded no library: mpi4py finds its own
        LIBMPI = None
    requested = os.environ.get("MPI4PY_LIBMPI")
    if LIBMPI:
        os.environ.setdefault("MPI4PY_LIBMPI", LIBMPI)
    from mpi4py import MPI  # initialises MPI (unless mpi4py.rc says not to), loads libmpi

    try:
        from mpirep import _core as loaded
    except ImportError:
        if importlib.util.find_spec("mpirep._core") is not None:
            raise  # it is there but does not load: the loader's reason says why
        package_dir = os.path.dirname(os.path.abspath(__file__))
        raise ImportError(_missing_core.explain(package_dir)) from None
    mpi = _mpi_consistency.loaded_by(loaded.__file__)
    _mpi_consistency.check_same_library(
        mpi, _mpi_consistency.loaded_by(MPI.__file__),
        requested if requested and requested != LIBMPI else None)
    if MPI.Is_initialized():
        _mpi_consistency.check_launcher(MPI.COMM_WORLD.Get_size(), mpi)
    return loaded, mpi
