"""Loads the native core on first use, never at ``import mpirep`` (the launcher imports this
package and must not start MPI).

mpi4py is imported first so that MPI is initialised with the thread level the core needs, and
it is pointed at the libmpi the core was built against (recorded by the build in
``mpirep/_mpi_library.py``), so that both load the same library even where several MPIs are
installed.
"""

import os

_core = None


def core():
    global _core
    if _core is None:
        try:
            from mpirep._mpi_library import LIBMPI
        except ImportError:  # a build that recorded no library: mpi4py finds its own
            LIBMPI = None
        if LIBMPI:
            os.environ.setdefault("MPI4PY_LIBMPI", LIBMPI)
        from mpi4py import MPI  # noqa: F401  (initialises MPI, loads libmpi)
        from mpirep import _core as loaded

        _core = loaded
    return _core
