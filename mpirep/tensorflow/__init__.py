"""mpirep for TensorFlow, with the interface of ``horovod.tensorflow``: port a Horovod script by
changing its import to ``import mpirep.tensorflow as hvd``.

Ops run in graphs through a TensorFlow op library built on first use, or through
tf.numpy_function where it cannot be built (see docs/tensorflow.md).
"""

import sys

from mpirep import (
    cross_rank,
    cross_size,
    is_initialized,
    local_rank,
    local_size,
    rank,
    shutdown,
    size,
    start_timeline,
    stop_timeline,
)
from mpirep.collectives import reduce_op_attribute
from mpirep.tensorflow.basics import (
    ccl_built,
    cuda_built,
    ddl_built,
    gloo_built,
    gloo_enabled,
    init,
    mpi_built,
    mpi_enabled,
    mpi_threads_supported,
    nccl_built,
    rocm_built,
)
from mpirep.tensorflow.compression import Compression
from mpirep.tensorflow.functions import (
    allgather_object,
    broadcast_,
    broadcast_global_variables,
    broadcast_object,
    broadcast_object_fn,
    broadcast_variables,
)
from mpirep.tensorflow.gradient_tape import (
    DistributedGradientTape,
    PartialDistributedGradientTape,
)
from mpirep.tensorflow.mpi_ops import (
    Adasum,
    allgather,
    allreduce,
    alltoall,
    broadcast,
    grouped_allgather,
    grouped_allreduce,
    grouped_reducescatter,
    join,
    reduce,
    reducescatter,
)
from mpirep.tensorflow.optimizer import DistributedOptimizer, PartialDistributedOptimizer
from mpirep.tensorflow import util  # noqa: F401  (hvd.util._executing_eagerly)
from mpirep.tensorflow.zero import ZeroRedundancyOptimizer
from mpirep.tensorflow._xla import XlaCollectiveError
from mpirep.tensorflow.rank_ops import (
    local_rank_op,
    local_size_op,
    process_set_included_op,
    rank_op,
    size_op,
)
from mpirep.tensorflow.util import _executing_eagerly  # noqa: F401  (hvd._executing_eagerly)
from mpirep.tensorflow.process_sets import (
    ProcessSet,
    add_process_set,
    global_process_set,
    remove_process_set,
)


def __getattr__(name):
    if name == "PreemptionCheckpointHandler":
        from mpirep.tensorflow.preemption import PreemptionCheckpointHandler

        return PreemptionCheckpointHandler
    if name == "elastic":   # hvd.elastic: imported on first use (docs/elastic.md)
        import importlib

        return importlib.import_module("mpirep.tensorflow.elastic")
    if name == "SyncBatchNormalization":  # made on first use: it subclasses tf.keras's layer
        from mpirep.tensorflow.sync_batch_norm import sync_batch_normalization_class

        return sync_batch_normalization_class()
    return reduce_op_attribute(sys.modules[__name__], name)
