"""DistributedGradientTape: a tf.GradientTape whose gradient() averages over ranks."""

import tensorflow as tf

from mpirep.tensorflow._gradients import GradientReducer, VariableSet
from mpirep.tensorflow.compression import Compression
from mpirep.tensorflow.process_sets import global_process_set


def DistributedGradientTape(gradtape, device_dense="", device_sparse="",
                            compression=Compression.none, sparse_as_dense=False, op=None,
                            gradient_predivide_factor=1.0, num_groups=0, groups=None,
                            process_set=global_process_set, scale_local_gradients=True):
    """Returns ``gradtape`` turned into a tape whose ``gradient()`` returns gradients reduced
    over the ranks of ``process_set`` (Average by default). Use it as the original tape. On a
    rank outside the set the gradients come back unreduced, as in Horovod. Sources registered
    with ``register_local_source`` keep their local gradient, divided by the set's size when
    ``scale_local_gradients``."""
    reducer = GradientReducer(compression, sparse_as_dense, op, gradient_predivide_factor,
                              num_groups, groups, process_set, scale_local_gradients)
    tape = _DistributedTape.__new__(_DistributedTape)
    tape.__dict__.update(gradtape.__dict__)
    tape._mpirep_reducer = reducer
    tape._mpirep_local_sources = VariableSet()
    return tape


def PartialDistributedGradientTape(gradtape, device_dense="", device_sparse="",
                                   compression=Compression.none, sparse_as_dense=False, op=None,
                                   gradient_predivide_factor=1.0, num_groups=0, groups=None,
                                   process_set=global_process_set, local_layers=None,
                                   scale_local_gradients=True):
    """DistributedGradientTape whose ``local_layers`` (a Keras layer or a list of them) keep
    the gradients of their trainable weights local: for model-parallel layers, whose weights
    differ between ranks."""
    tape = DistributedGradientTape(gradtape, device_dense, device_sparse, compression,
                                   sparse_as_dense, op, gradient_predivide_factor, num_groups,
                                   groups, process_set, scale_local_gradients)
    for variable in local_layer_variables(local_layers):
        tape.register_local_source(variable)
    return tape


def local_layer_variables(local_layers):
    """The trainable weights of ``local_layers`` (None, a Keras layer, or a list of them)."""
    if local_layers is None:
        return []
    if not isinstance(local_layers, (list, tuple)):
        local_layers = [local_layers]
    not_layers = [layer for layer in local_layers if not hasattr(layer, "trainable_weights")]
    if not_layers:
        raise ValueError(f"local_layers must be Keras layers, got {not_layers}")
    return [v for layer in local_layers for v in layer.trainable_weights]


class _DistributedTape(tf.GradientTape):
    @tf.autograph.experimental.do_not_convert
    def register_local_source(self, source):
        """Keeps ``source``'s gradient local: it is not reduced over ranks."""
        self._mpirep_local_sources.add(source)

    @tf.autograph.experimental.do_not_convert
    def gradient(self, target, sources, output_gradients=None,
                 unconnected_gradients=tf.UnconnectedGradients.NONE, use_generic_names=False):
        """tf.GradientTape.gradient, reduced over ranks. ``use_generic_names`` is accepted for
        Horovod's sake: mpirep's names already match between ranks that build the same
        graph."""
        grads = super().gradient(target, sources, output_gradients, unconnected_gradients)
        flat = self._mpirep_reducer(tf.nest.flatten(grads), tf.nest.flatten(sources),
                                    self._mpirep_local_sources)
        return tf.nest.pack_sequence_as(grads, flat)

    def get_local_and_global_gradients(self, target, sources, output_gradients=None):
        """The gradients as two lists of (source, gradient) pairs: local sources', then the
        others'."""
        grads = self.gradient(target, sources, output_gradients)
        pairs = list(zip(tf.nest.flatten(sources), tf.nest.flatten(grads)))
        local = [(s, g) for s, g in pairs if s in self._mpirep_local_sources]
        shared = [(s, g) for s, g in pairs if s not in self._mpirep_local_sources]
        return local, shared
