"""DistributedOptimizer for Keras optimizers: Keras 3 (``tf.keras`` on TF >= 2.16) and tf_keras
(``TF_USE_LEGACY_KERAS=1``).

The wrapper is a subclass of the optimizer's own class, made on the fly and given the same name
and module, so a saved model records a plain optimizer that loads without mpirep;
``mpirep.tensorflow.keras.load_model`` wraps it again. Gradients are reduced over ranks just
before the optimizer applies them: in ``apply`` for Keras 3 (which Model.fit and
``apply_gradients`` both call) and in ``apply_gradients`` for tf_keras.
"""

import tensorflow as tf

from mpirep.tensorflow._accumulation import GradientAccumulator
from mpirep.tensorflow._gradients import GradientReducer
from mpirep.tensorflow.compression import Compression
from mpirep.tensorflow.process_sets import global_process_set


def DistributedOptimizer(optimizer, name=None, device_dense="", device_sparse="",
                         compression=Compression.none, sparse_as_dense=False,
                         backward_passes_per_step=1, op=None, gradient_predivide_factor=1.0,
                         average_aggregated_gradients=False, num_groups=0, groups=None,
                         process_set=global_process_set):
    """A new optimizer like ``optimizer`` (same class and config) that averages gradients over
    all ranks before applying them. With ``backward_passes_per_step`` > 1 gradients are summed
    locally (averaged when ``average_aggregated_gradients``) and reduced and applied once every
    that many steps."""
    config = optimizer.get_config()
    if name is not None:
        config["name"] = name
    wrapped = wrapper_class(type(optimizer)).from_config(config)
    attach(wrapped, compression=compression, sparse_as_dense=sparse_as_dense, op=op,
           gradient_predivide_factor=gradient_predivide_factor, num_groups=num_groups,
           groups=groups, process_set=process_set,
           backward_passes_per_step=backward_passes_per_step,
           average_aggregated_gradients=average_aggregated_gradients)
    return wrapped


def attach(optimizer, backward_passes_per_step=1, average_aggregated_gradients=False, **reduce):
    """Turns ``optimizer`` itself into a distributed one, keeping its state (used after
    loading a model, whose optimizer already holds restored variables)."""
    if backward_passes_per_step < 1:
        raise ValueError("backward_passes_per_step must be >= 1")
    if not isinstance(optimizer, _Distributed):
        optimizer.__class__ = wrapper_class(type(optimizer))
    optimizer._mpirep_reducer = GradientReducer(**reduce)
    optimizer._mpirep_accumulator = (
        GradientAccumulator(backward_passes_per_step, average_aggregated_gradients)
        if backward_passes_per_step > 1 else None)
    return optimizer


class _Distributed:
    """Marks the wrapper classes."""

    def _mpirep_step(self, grads, variables, apply):
        accumulator = self._mpirep_accumulator
        if accumulator is None:
            return apply(self._mpirep_reducer(grads, variables))
        return accumulator.step(grads, variables,
                                lambda summed: apply(self._mpirep_reducer(summed, variables)))


class _Keras3(_Distributed):
    def apply(self, grads, trainable_variables=None):
        if trainable_variables is None:
            trainable_variables = self._trainable_variables
        variables = list(trainable_variables)
        if not self.built:  # build outside the accumulator's tf.cond
            self.build(variables)
        base_apply = super().apply
        return self._mpirep_step(list(grads), variables,
                                 lambda reduced: base_apply(reduced, variables))


class _TfKeras(_Distributed):
    def apply_gradients(self, grads_and_vars, *args, **kwargs):
        grads, variables = zip(*grads_and_vars)
        base_apply = super().apply_gradients
        return self._mpirep_step(list(grads), list(variables),
                                 lambda reduced: base_apply(zip(reduced, variables), *args,
                                                            **kwargs))


_classes = {}


def wrapper_class(base):
    if issubclass(base, _Distributed):
        return base
    if base not in _classes:
        mixin = _Keras3 if _is_keras3(base) else _TfKeras
        _classes[base] = type(base.__name__, (mixin, base), {"__module__": base.__module__})
    return _classes[base]


def _is_keras3(cls):
    try:
        import keras
    except ImportError:
        return False
    return int(keras.__version__.split(".")[0]) >= 3 and issubclass(cls, keras.optimizers.Optimizer)
