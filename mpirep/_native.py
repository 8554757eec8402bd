"""Loads the native core on first use, never at ``import mpirep`` (the launcher imports this
package and must not start MPI).

mpi4py is imported first so that the core binds to the libmpi that mpi4py loaded, and MPI is
initialised by mpi4py with the thread level the core needs.
"""

_core = None


def core():
    global _core
    if _core is None:
        from mpi4py import MPI  # noqa: F401  (initialises MPI, loads libmpi)
        from mpirep import _core as loaded

        _core = loaded
    return _core
