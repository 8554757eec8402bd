"""mpirep: MPI-backed, Horovod-style data-parallel training.

``import mpirep`` loads nothing native and no TensorFlow; MPI starts with :func:`init`. The
reduction ops (``mpirep.Sum``, ``Average``, ``Min``, ``Max``, ``Product``) are the core's own
codes, looked up on first use; ``mpirep.Replicator`` and ``mpirep.InputContext`` import
TensorFlow on first use.
"""

import sys

from mpirep.collectives import (
    Handle,
    add_process_set,
    allgather,
    allgather_async,
    allreduce,
    allreduce_async,
    alltoall,
    alltoall_async,
    barrier,
    broadcast,
    broadcast_async,
    grouped_allreduce,
    grouped_allreduce_async,
    join,
    poll,
    process_set_rank,
    process_set_ranks,
    process_set_size,
    reduce,
    reduce_async,
    reducescatter,
    reducescatter_async,
    remove_process_set,
    synchronize,
)
from mpirep.errors import (
    InvalidArgumentError,
    MismatchError,
    MpirepError,
    NotInitializedError,
    ShutdownError,
    StallError,
    UnsupportedError,
)
from mpirep.session import (
    config,
    cross_rank,
    cross_size,
    dump_flight_record,
    init,
    is_initialized,
    local_rank,
    local_size,
    rank,
    shutdown,
    size,
)
from mpirep.function_job import RankError, run
from mpirep.settings import Config
from mpirep.timeline import start_timeline, stop_timeline


def __getattr__(name):
    if name in ("Replicator", "InputContext"):
        from mpirep import replicator

        return getattr(replicator, name)
    from mpirep.collectives import reduce_op_attribute

    return reduce_op_attribute(sys.modules[__name__], name)
