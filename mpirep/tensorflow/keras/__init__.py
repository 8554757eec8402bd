"""mpirep for Keras on TensorFlow, with the interface of ``horovod.tensorflow.keras``: port a
Horovod Keras script by changing its import to ``import mpirep.tensorflow.keras as hvd``.

Works with Keras 3 (``tf.keras`` on TF >= 2.16) and with tf_keras (``TF_USE_LEGACY_KERAS=1``).
"""

import sys

import tensorflow as tf

from mpirep.collectives import reduce_op_attribute
from mpirep.tensorflow import (  # noqa: F401  (the shared part of the interface)
    Adasum,
    Compression,
    DistributedGradientTape,
    DistributedOptimizer,
    ProcessSet,
    XlaCollectiveError,
    ZeroRedundancyOptimizer,
    add_process_set,
    allgather_object,
    broadcast_object,
    broadcast_variables,
    cross_rank,
    cross_size,
    global_process_set,
    init,
    is_initialized,
    join,
    local_rank,
    local_size,
    mpi_built,
    mpi_enabled,
    mpi_threads_supported,
    rank,
    remove_process_set,
    shutdown,
    size,
    start_timeline,
    stop_timeline,
)
from mpirep.tensorflow import mpi_ops as _ops
from mpirep.tensorflow.functions import broadcast_global_variables  # noqa: F401
from mpirep.tensorflow.keras import callbacks  # noqa: F401
from mpirep.tensorflow.optimizer import PartialDistributedOptimizer  # noqa: F401
from mpirep.tensorflow.optimizer import attach as _attach


def allreduce(value, name=None, average=None, prescale_factor=1.0, postscale_factor=1.0,
              op=None, compression=Compression.none):
    """The reduction of a value (array, tensor or number) over ranks, as a tensor."""
    return _ops.allreduce(tf.convert_to_tensor(value), average=average, op=op, name=name,
                          prescale_factor=prescale_factor, postscale_factor=postscale_factor,
                          compression=compression)


def allgather(value, name=None):
    """Every rank's value concatenated along the first dimension, as a tensor."""
    return _ops.allgather(tf.convert_to_tensor(value), name=name)


def broadcast(value, root_rank, name=None):
    """``root_rank``'s value, as a tensor."""
    return _ops.broadcast(tf.convert_to_tensor(value), root_rank, name=name)


def reducescatter(value, name=None, op=None):
    """This rank's block of rows of the reduction (Average by default) of a value over
    ranks, as a tensor."""
    return _ops.reducescatter(tf.convert_to_tensor(value), name=name, op=op)


def load_model(filepath, custom_optimizers=None, custom_objects=None,
               compression=Compression.none, **distributed_options):
    """Loads a model saved by Keras and makes its optimizer distributed again, keeping the
    optimizer state the file restored. ``distributed_options`` are DistributedOptimizer's
    (op, sparse_as_dense, backward_passes_per_step, ...)."""
    objects = dict(custom_objects or {})
    for optimizer_class in custom_optimizers or []:
        objects[optimizer_class.__name__] = optimizer_class
    model = tf.keras.models.load_model(filepath, custom_objects=objects)
    if getattr(model, "optimizer", None) is not None:
        _attach(model.optimizer, compression=compression, **distributed_options)
    return model


def __getattr__(name):
    if name == "PreemptionCheckpointHandler":
        from mpirep.tensorflow.preemption import PreemptionCheckpointHandler

        return PreemptionCheckpointHandler
    if name == "elastic":   # hvd.elastic: imported on first use (docs/elastic.md)
        import importlib

        return importlib.import_module("mpirep.tensorflow.keras.elastic")
    if name == "SyncBatchNormalization":
        from mpirep.tensorflow.sync_batch_norm import sync_batch_normalization_class

        return sync_batch_normalization_class()
    return reduce_op_attribute(sys.modules[__name__], name)
