"""DistributedOptimizer for Keras optimizers, Keras 3 (``tf.keras`` on TF >= 2.16) and tf_keras
(``TF_USE_LEGACY_KERAS=1``), and for TF1-style ``tf.compat.v1.train.Optimizer`` subclasses.

The Keras wrapper is a subclass of the optimizer's own class, made on the fly and given the same
name and module, so a saved model records a plain optimizer that loads without mpirep;
``mpirep.tensorflow.keras.load_model`` wraps it again. Gradients are reduced over ranks in
``compute_gradients`` (Horovod's place, which tf_keras's ``minimize`` and Model.fit use), or,
for gradients that did not come from there, just before the optimizer applies them: in
``apply`` for Keras 3 (which Model.fit and ``apply_gradients`` both call) and in
``apply_gradients`` for tf_keras. With Keras 3's ``gradient_accumulation_steps`` the Keras 3
wrapper reduces once per accumulation (_keras_accumulation.py). The TF1 wrapper reduces in
``compute_gradients`` only, as Horovod's does.
"""

import tensorflow as tf

from mpirep.tensorflow import _keras_accumulation
from mpirep.tensorflow._accumulation import GradientAccumulator
from mpirep.tensorflow._gradients import GradientReducer, VariableSet
from mpirep.tensorflow.compression import Compression
from mpirep.tensorflow.gradient_tape import local_layer_variables
from mpirep.tensorflow.loss_scale import agree_on_skipped_steps
from mpirep.tensorflow.process_sets import global_process_set


def DistributedOptimizer(optimizer, name=None, use_locking=False, device_dense="",
                         device_sparse="", compression=Compression.none, sparse_as_dense=False,
                         backward_passes_per_step=1, op=None, gradient_predivide_factor=1.0,
                         average_aggregated_gradients=False, num_groups=0, groups=None,
                         process_set=global_process_set, scale_local_gradients=True):
    """A new optimizer like ``optimizer`` (same class and config) that averages gradients over
    the ranks of ``process_set`` before applying them. With ``backward_passes_per_step`` > 1
    gradients are summed locally (averaged when ``average_aggregated_gradients``) and reduced
    and applied once every that many steps. Variables registered with ``register_local_var``
    keep their local gradient, divided by the set's size when ``scale_local_gradients``."""
    options = dict(compression=compression, sparse_as_dense=sparse_as_dense, op=op,
                   gradient_predivide_factor=gradient_predivide_factor, num_groups=num_groups,
                   groups=groups, process_set=process_set,
                   scale_local_gradients=scale_local_gradients,
                   backward_passes_per_step=backward_passes_per_step,
                   average_aggregated_gradients=average_aggregated_gradients)
    if isinstance(optimizer, tf.compat.v1.train.Optimizer):
        return attach(_LegacyDistributedOptimizer(optimizer, name, use_locking), **options)
    config = optimizer.get_config()
    if name is not None:
        config["name"] = name
    return attach(wrapper_class(type(optimizer)).from_config(config), **options)


def PartialDistributedOptimizer(optimizer, name=None, device_dense="", device_sparse="",
                                compression=Compression.none, sparse_as_dense=False,
                                gradient_predivide_factor=1.0, op=None,
                                backward_passes_per_step=1, average_aggregated_gradients=False,
                                groups=None, process_set=global_process_set, local_layers=None,
                                scale_local_gradients=True):
    """DistributedOptimizer whose ``local_layers`` (a Keras layer or a list of them) keep the
    gradients of their trainable weights local, for model-parallel layers."""
    wrapped = DistributedOptimizer(
        optimizer, name=name, compression=compression, sparse_as_dense=sparse_as_dense,
        backward_passes_per_step=backward_passes_per_step, op=op,
        gradient_predivide_factor=gradient_predivide_factor,
        average_aggregated_gradients=average_aggregated_gradients, groups=groups,
        process_set=process_set, scale_local_gradients=scale_local_gradients)
    for variable in local_layer_variables(local_layers):
        wrapped.register_local_var(variable)
    return wrapped


def attach(optimizer, backward_passes_per_step=1, average_aggregated_gradients=False, **reduce):
    """Turns ``optimizer`` itself into a distributed one, keeping its state (used after
    loading a model, whose optimizer already holds restored variables)."""
    if backward_passes_per_step < 1:
        raise ValueError("backward_passes_per_step must be >= 1")
    _keras_accumulation.check_supported(optimizer, backward_passes_per_step)
    if not isinstance(optimizer, _Distributed):
        optimizer.__class__ = wrapper_class(type(optimizer))
    # Plain attributes of a holder: Keras would track a list or a set assigned to itself.
    optimizer._mpirep = _State(
        GradientReducer(**reduce),
        GradientAccumulator(backward_passes_per_step, average_aggregated_gradients)
        if backward_passes_per_step > 1 else None)
    return optimizer


class _State:
    def __init__(self, reducer, accumulator):
        self.reducer = reducer
        self.accumulator = accumulator
        self.local_vars = VariableSet()  # the variables whose gradients stay local
        self.reduced = None  # the gradients compute_gradients returned last


class _Distributed:
    """What every wrapper shares: reducing, accumulating, and knowing which gradients are
    already reduced."""

    @property
    def _agg_helper(self):
        """Horovod's name for the accumulator of backward_passes_per_step (its ``counter``
        counts the passes since the last reduction); None without accumulation."""
        return self._mpirep.accumulator

    @tf.autograph.experimental.do_not_convert
    def register_local_var(self, var):
        """Keeps ``var``'s gradient local: it is not reduced over ranks."""
        self._mpirep.local_vars.add(var)

    def _mpirep_reduce(self, grads, variables):
        state = self._mpirep
        variables = list(variables)

        def reduce(gs):
            return state.reducer(gs, variables, state.local_vars)

        if state.accumulator is None:
            reduced = reduce(list(grads))
        else:
            reduced = state.accumulator.accumulate_and_reduce(list(grads), variables, reduce)
        state.reduced = reduced
        return reduced

    def _mpirep_reduced_already(self, grads):
        """Whether ``grads`` are the ones compute_gradients returned last (then forgotten), or
        were made from them in the same graph: tf_keras's loss-scale optimizer computes scaled
        gradients through compute_gradients and applies them unscaled, new tensors, which
        must not be reduced (and accumulated) a second time."""
        last, self._mpirep.reduced = self._mpirep.reduced, None
        if last is None or len(last) != len(grads):
            return False
        if all(a is b for a, b in zip(last, grads)):
            return True
        graph = _graph_of(last)
        return graph is not None and graph is _graph_of(grads)

    def _mpirep_apply(self, grads, variables, apply, count_skipped_step):
        """apply(reduced gradients), reducing ``grads`` first unless they came from
        compute_gradients; with accumulation only every N-th pass applies."""
        grads = list(grads)
        reduced = grads if self._mpirep_reduced_already(grads) else \
            self._mpirep_reduce(grads, variables)
        accumulator = self._mpirep.accumulator
        if accumulator is None:
            return apply(reduced)
        return accumulator.apply_when_reduced(lambda: apply(reduced), count_skipped_step,
                                              reduced)


def _graph_of(tensors):
    """The graph of the first graph tensor among ``tensors``; None eagerly."""
    for tensor in tensors:
        try:
            return tensor.graph   # an eager tensor, and None, have none
        except AttributeError:
            continue
    return None


class _Keras(_Distributed):
    """Horovod's compute_gradients for Keras optimizers: the gradients of ``loss`` (a tensor
    recorded on ``tape``, or a callable), reduced over ranks, as (gradient, variable) pairs."""

    @classmethod
    def from_config(cls, config, custom_objects=None):
        """A working distributed optimizer with the default options (Average)."""
        return attach(super().from_config(config, custom_objects=custom_objects))

    def compute_gradients(self, loss, var_list, tape=None):
        return self._compute_gradients(loss, var_list, tape=tape)

    def _compute_gradients(self, loss, var_list, grad_loss=None, tape=None):
        grads_and_vars = self._mpirep_local_gradients(loss, var_list, grad_loss, tape)
        grads, variables = zip(*grads_and_vars)
        return list(zip(self._mpirep_reduce(grads, variables), variables))

    def _mpirep_local_gradients(self, loss, var_list, grad_loss, tape):
        base = super(_Keras, self)
        if hasattr(base, "_compute_gradients"):  # tf_keras's OptimizerV2
            return base._compute_gradients(loss, var_list, grad_loss, tape=tape)
        if hasattr(base, "compute_gradients"):  # tf_keras's Optimizer
            return base.compute_gradients(loss, var_list, tape)
        tape = tf.GradientTape() if tape is None else tape  # Keras 3 has no compute_gradients
        if callable(loss):
            with tape:
                loss = loss()
        var_list = list(var_list() if callable(var_list) else var_list)
        return list(zip(tape.gradient(loss, var_list, grad_loss), var_list))

    def _mpirep_count_skipped_step(self):
        return self.iterations.assign_add(1)


class _Keras3(_Keras):
    def apply(self, grads, trainable_variables=None):
        if trainable_variables is None:
            trainable_variables = self._trainable_variables
        variables = list(trainable_variables)
        if not self.built:  # build outside the accumulator's tf.cond
            self.build(variables)
        base_apply = super().apply
        if _keras_accumulation.steps(self):
            grads = list(grads)
            if not self._mpirep_reduced_already(grads):
                grads = _keras_accumulation.reduce_on_update_step(
                    self, grads, variables, lambda gs: self._mpirep_reduce(gs, variables))
            return base_apply(grads, variables)
        return self._mpirep_apply(grads, variables,
                                  lambda reduced: base_apply(reduced, variables),
                                  self._mpirep_count_skipped_step)


class _TfKeras(_Keras):
    def apply_gradients(self, grads_and_vars, *args, **kwargs):
        grads, variables = zip(*grads_and_vars)
        base_apply = super().apply_gradients
        return self._mpirep_apply(grads, variables,
                                  lambda reduced: base_apply(zip(reduced, variables), *args,
                                                             **kwargs),
                                  self._mpirep_count_skipped_step)


class _LegacyDistributedOptimizer(_Distributed, tf.compat.v1.train.Optimizer):
    """Wraps a ``tf.compat.v1.train.Optimizer``: ``compute_gradients`` reduces, the rest is
    the wrapped optimizer's."""

    def __init__(self, optimizer, name=None, use_locking=False):
        super().__init__(name=name or f"Distributed{type(optimizer).__name__}",
                         use_locking=use_locking)
        self._optimizer = optimizer

    def compute_gradients(self, *args, **kwargs):
        grads, variables = zip(*self._optimizer.compute_gradients(*args, **kwargs))
        return list(zip(self._mpirep_reduce(grads, variables), variables))

    def apply_gradients(self, grads_and_vars, global_step=None, name=None):
        grads_and_vars = list(grads_and_vars)
        accumulator = self._mpirep.accumulator

        def apply():
            return self._optimizer.apply_gradients(grads_and_vars, global_step, name)

        if accumulator is None:
            return apply()

        def count_skipped_step():
            if global_step is None:
                return tf.no_op()
            return global_step.assign_add(tf.constant(1, global_step.dtype.base_dtype))

        return accumulator.apply_when_reduced(apply, count_skipped_step,
                                              [g for g, _ in grads_and_vars])

    def get_slot(self, *args, **kwargs):
        return self._optimizer.get_slot(*args, **kwargs)

    def get_slot_names(self, *args, **kwargs):
        return self._optimizer.get_slot_names(*args, **kwargs)

    def variables(self, *args, **kwargs):
        return self._optimizer.variables(*args, **kwargs)


def wrapping_class(base, wrapper, keras3_mixin, tf_keras_mixin, made):
    """``base`` itself if it is already a ``wrapper``; else the subclass of ``base`` with the
    mixin for its Keras, named like ``base`` so that saved configs name the user's class, and
    made once per base (``made`` keeps them)."""
    if issubclass(base, wrapper):
        return base
    if base not in made:
        agree_on_skipped_steps()
        mixin = keras3_mixin if _is_keras3(base) else tf_keras_mixin
        made[base] = type(base.__name__, (mixin, base), {"__module__": base.__module__})
    return made[base]


_classes = {}


def wrapper_class(base):
    return wrapping_class(base, _Distributed, _Keras3, _TfKeras, _classes)


def _is_keras3(cls):
    try:
        import keras
    except ImportError:
        return False
    return int(keras.__version__.split(".")[0]) >= 3 and issubclass(cls, keras.optimizers.Optimizer)
