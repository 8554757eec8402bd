"""DistributedGradientTape: a tf.GradientTape whose gradient() averages over ranks."""

import tensorflow as tf

from mpirep.tensorflow._gradients import GradientReducer
from mpirep.tensorflow.compression import Compression
from mpirep.tensorflow.process_sets import global_process_set


def DistributedGradientTape(gradtape, device_dense="", device_sparse="",
                            compression=Compression.none, sparse_as_dense=False, op=None,
                            gradient_predivide_factor=1.0, num_groups=0, groups=None,
                            process_set=global_process_set):
    """Returns ``gradtape`` turned into a tape whose ``gradient()`` returns gradients reduced
    over all ranks (Average by default). Use it as the original tape."""
    reducer = GradientReducer(compression, sparse_as_dense, op, gradient_predivide_factor,
                              num_groups, groups, process_set)
    tape = _DistributedTape.__new__(_DistributedTape)
    tape.__dict__.update(gradtape.__dict__)
    tape._mpirep_reducer = reducer
    return tape


class _DistributedTape(tf.GradientTape):
    @tf.autograph.experimental.do_not_convert
    def gradient(self, target, sources, output_gradients=None,
                 unconnected_gradients=tf.UnconnectedGradients.NONE):
        grads = super().gradient(target, sources, output_gradients, unconnected_gradients)
        flat_sources = tf.nest.flatten(sources)
        flat = self._mpirep_reducer(tf.nest.flatten(grads), flat_sources)
        return tf.nest.pack_sequence_as(grads, flat)
