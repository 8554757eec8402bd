"""Starting mpirep and asking about the job and the build, with horovod.tensorflow's names."""

import mpirep
from mpirep.tensorflow import _xla, process_sets


def init(comm=None, process_sets=None, **settings):
    """Starts mpirep (see :func:`mpirep.init`; ``comm`` may be a communicator or a list of
    ranks); ``process_sets`` are registered afterwards, in the order given, as Horovod does.
    Also loads the XLA kernels (building them on first use), which must be in the process
    before TensorFlow first compiles anything with XLA."""
    mpirep.init(comm, **settings)
    _xla.load()
    return [_register(s) for s in (process_sets or [])]


def _register(process_set):
    return process_sets.add_process_set(process_set)


def mpi_threads_supported():
    """Whether MPI was initialised with MPI_THREAD_MULTIPLE."""
    from mpi4py import MPI

    return MPI.Query_thread() == MPI.THREAD_MULTIPLE


def mpi_enabled():
    return True


def mpi_built():
    return True


def _not_built():
    return False


gloo_enabled = gloo_built = nccl_built = ddl_built = ccl_built = cuda_built = rocm_built = \
    _not_built
