"""Input for replicas: the InputContext given to input functions, and dataset distribution."""

import numpy as np
import tensorflow as tf

import mpirep
from mpirep.tensorflow import mpi_ops


class InputContext:
    """What an input function needs to know to build this replica's share of the input."""

    def __init__(self, num_replicas, replica_id):
        self.num_replicas = num_replicas
        self.replica_id = replica_id

    def per_replica_batch_size(self, global_batch_size):
        """The batch each replica takes so that the replicas together take ``global_batch_size``."""
        if global_batch_size % self.num_replicas:
            raise ValueError(f"global batch size {global_batch_size} does not divide among "
                             f"{self.num_replicas} replicas")
        return global_batch_size // self.num_replicas

    def __repr__(self):
        return f"InputContext(num_replicas={self.num_replicas}, replica_id={self.replica_id})"


def distribute_dataset(dataset, global_batch_size, context):
    """This replica's batches of ``dataset``: element i goes to replica i % num_replicas, batched
    per replica without the remainder, and cut to the number of batches every replica has.

    Global step k then holds elements [k*B, (k+1)*B) of ``dataset`` spread over the replicas, the
    same examples as one process batching by B with drop_remainder, and no replica waits in a
    collective for a replica that ran out of data. Padding would instead feed a last batch of
    filler or of a different size, which changes averaged gradients and batch statistics.
    """
    per_replica = context.per_replica_batch_size(global_batch_size)
    batches = dataset.shard(context.num_replicas, context.replica_id)
    batches = batches.batch(per_replica, drop_remainder=True)
    count = _count(batches)
    if count is None:
        return batches
    fewest = mpi_ops.allreduce(tf.constant(count, tf.int64), op=mpirep.Min,
                               name="replicator.dataset_batches")
    return batches.take(int(fewest))


def _count(batches):
    """The number of batches, counted by iterating when tf.data cannot tell; None if infinite.
    Every replica reports an answer, so they all reach the collective that follows."""
    cardinality = int(batches.cardinality())
    if cardinality == tf.data.INFINITE_CARDINALITY:
        return None
    if cardinality == tf.data.UNKNOWN_CARDINALITY:
        cardinality = int(batches.reduce(np.int64(0), lambda count, _: count + 1))
    return cardinality
