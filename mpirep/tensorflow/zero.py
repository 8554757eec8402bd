"""ZeroRedundancyOptimizer: data parallelism whose optimizer state is sharded across ranks, as
ZeRO stage 1 does (docs/zero.md).

Each rank owns whole variables (balanced by bytes, _zero_plan.py) and keeps the optimizer's
slot variables for those alone. A step reduce-scatters the gradients so that each rank gets the
reduced gradients of its own variables, applies the wrapped optimizer to them, and allgathers
the updated parameters (_zero_exchange.py). Like DistributedOptimizer's, the wrapper is a
subclass of the optimizer's class with the same name, so a saved model records a plain
optimizer. At one rank, or on a rank outside its process set, it is the plain optimizer.
"""

import numpy as np
import tensorflow as tf

import mpirep
from mpirep.tensorflow import _zero_checkpoint, mpi_ops
from mpirep.tensorflow._accumulation import GradientAccumulator
from mpirep.tensorflow._zero_exchange import gather_parameters, reduce_scatter
from mpirep.tensorflow._zero_plan import consecutive_groups, make_plan
from mpirep.tensorflow.compression import Compression
from mpirep.tensorflow.process_sets import global_process_set


def ZeroRedundancyOptimizer(optimizer, name=None, compression=Compression.none, op=None,
                            gradient_predivide_factor=1.0, backward_passes_per_step=1,
                            average_aggregated_gradients=False, num_groups=0,
                            process_set=global_process_set):
    """A new optimizer like ``optimizer`` (same class and config, Keras 3 or tf_keras) that
    trains data-parallel over ``process_set`` keeping only its shard of the optimizer state;
    a built Keras 3 ``optimizer`` gives it its shard of its state.
    ``num_groups`` = k exchanges the variables in k groups of consecutive variables, each
    as soon as its gradients exist (default: one group); the other options are
    DistributedOptimizer's."""
    if isinstance(optimizer, tf.compat.v1.train.Optimizer):
        raise NotImplementedError(
            f"{_rank()}ZeroRedundancyOptimizer wraps Keras optimizers, not "
            "tf.compat.v1.train.Optimizer")
    if not hasattr(type(optimizer), "add_variable_from_reference"):
        raise NotImplementedError(
            f"{_rank()}ZeroRedundancyOptimizer wraps optimizers that build their slots in "
            f"build(var_list) (Keras 3, tf_keras's current ones), not {type(optimizer).__name__} "
            "(a tf_keras legacy optimizer?)")
    if getattr(optimizer, "global_clipnorm", None):
        raise ValueError(
            f"{_rank()}ZeroRedundancyOptimizer cannot clip by global norm "
            "(global_clipnorm): each rank holds only its own variables' gradients; use clipnorm "
            "or clipvalue, which act per variable")
    if getattr(optimizer, "use_ema", False):
        raise ValueError(
            f"{_rank()}ZeroRedundancyOptimizer cannot keep a moving average of the weights "
            "(use_ema): its final swap into the model would reach only this rank's variables")
    config = optimizer.get_config()
    if name is not None:
        config["name"] = name
    options = dict(compression=compression, op=op,
                   gradient_predivide_factor=gradient_predivide_factor,
                   backward_passes_per_step=backward_passes_per_step,
                   average_aggregated_gradients=average_aggregated_gradients,
                   num_groups=num_groups, process_set=process_set)
    zero = attach(wrapper_class(type(optimizer)).from_config(config), **options)
    if _is_built(optimizer) and not isinstance(optimizer, _Zero) and \
            hasattr(optimizer, "_trainable_variables"):
        # A built Keras 3 optimizer (one load_model restored, say): keep this rank's shard.
        zero.build(optimizer._trainable_variables)
        zero.load_own_variables({str(i): v.numpy()
                                 for i, v in enumerate(_own_variables(optimizer))})
    return zero


def attach(optimizer, compression=Compression.none, op=None, gradient_predivide_factor=1.0,
           backward_passes_per_step=1, average_aggregated_gradients=False, num_groups=0,
           process_set=global_process_set):
    if backward_passes_per_step < 1:
        raise ValueError(f"{_rank()}backward_passes_per_step must be >= 1")
    op = mpi_ops._resolve_op(op, None)
    if op not in (mpirep.Average, mpirep.Sum):
        raise ValueError(f"{_rank()}ZeroRedundancyOptimizer reduces with Average or Sum, not "
                         f"{op}")
    if gradient_predivide_factor != 1.0 and op != mpirep.Average:
        raise ValueError(f"{_rank()}gradient_predivide_factor needs op=Average")
    if not isinstance(optimizer, _Zero):
        optimizer.__class__ = wrapper_class(type(optimizer))
    accumulator = (GradientAccumulator(backward_passes_per_step, average_aggregated_gradients)
                   if backward_passes_per_step > 1 else None)
    # A plain holder: Keras would track a list or a dict assigned to the optimizer itself.
    optimizer._mpirep_zero = _ZeroState(
        op, compression, 1.0 / gradient_predivide_factor, gradient_predivide_factor,
        num_groups, process_set, accumulator)
    return optimizer


def _rank():
    """The prefix that names this rank in an error message."""
    return f"rank {mpirep.rank()}: " if mpirep.is_initialized() else ""


class _ZeroState:
    def __init__(self, op, compression, prescale, postscale, num_groups, process_set,
                 accumulator):
        self.op = op
        self.compression = compression
        self.prescale = prescale
        self.postscale = postscale
        self.num_groups = num_groups
        self.process_set = process_set
        self.accumulator = accumulator
        self.variables = None       # every trainable variable, in the order built with
        self.plan = None
        self.slot_keys = {}         # id(slot variable) -> (variable index, slot name)
        self.layout_only = False    # a stand-in that only lists a plain optimizer's layout
        self.gathered = None        # (iterations, values) from gather_state, for one save

    @property
    def plain(self):
        return self.plan.size == 1

    def make_plan(self, variables):
        self.variables = list(variables)
        dtypes = [tf.as_dtype(v.dtype) for v in self.variables]
        ps = self.process_set
        sharded = (not self.layout_only and ps.process_set_id is not None and ps.included()
                   and ps.size() > 1)
        size, rank = (ps.size(), ps.rank()) if sharded else (1, 0)
        self.plan = make_plan([int(np.prod(v.shape)) for v in self.variables],
                              [d.name for d in dtypes], [d.size for d in dtypes], size, rank,
                              consecutive_groups(len(self.variables), self.num_groups))

    def record_slot(self, slot, reference, name):
        if self.variables is None:
            return
        for index, variable in enumerate(self.variables):
            if variable is reference:
                self.slot_keys[id(slot)] = (index, name)
                return


def _is_built(optimizer):
    return bool(getattr(optimizer, "built", False) or getattr(optimizer, "_built", False))


class _Zero:
    """What the Keras 3 and tf_keras wrappers share."""

    @classmethod
    def from_config(cls, config, custom_objects=None):
        """A working ZeRO optimizer with the default options."""
        return attach(super().from_config(config, custom_objects=custom_objects))

    def build(self, var_list):
        if _is_built(self):
            return
        state = self._mpirep_zero
        state.make_plan(var_list)
        super().build([state.variables[i] for i in state.plan.owned])

    def add_variable_from_reference(self, *args, **kwargs):
        slot = super().add_variable_from_reference(*args, **kwargs)
        reference = kwargs.get("reference_variable", kwargs.get("model_variable"))
        name = kwargs.get("name", kwargs.get("variable_name"))
        if reference is None:
            reference = args[0]
        if name is None and len(args) > 1:
            name = args[1]
        self._mpirep_zero.record_slot(slot, reference, name)
        return slot

    @property
    def _agg_helper(self):
        return self._mpirep_zero.accumulator

    def shard_plan(self):
        """The plan of the built optimizer: ``owner[i]`` is the rank (within the process set)
        that owns the i-th variable it was built with."""
        return self._mpirep_zero.plan

    def gather_state(self):
        """Collective over the process set: gathers every rank's shard of the optimizer state,
        so that the next save (on any rank) writes a plain optimizer's full state. Holds the
        full state in host memory until that save."""
        _zero_checkpoint.gather(self)

    def _mpirep_release_gathered_state(self):
        self._mpirep_zero.gathered = None

    def save_own_variables(self, store):
        if self._mpirep_zero.plan is None or self._mpirep_zero.plain:
            return super().save_own_variables(store)
        _zero_checkpoint.save(self, store)

    def load_own_variables(self, store):
        if self._mpirep_zero.plan is None or self._mpirep_zero.plain:
            return super().load_own_variables(store)
        _zero_checkpoint.load(self, store)

    def _mpirep_replicated_variables(self):
        """The optimizer variables every rank holds alike (the step counter, a learning-rate
        variable): what a broadcast of the optimizer's state may send."""
        keys = self._mpirep_zero.slot_keys
        return [v for v in _own_variables(self) if id(v) not in keys]

    def _mpirep_step(self, grads, variables, apply_owned):
        """Reduce-scatters ``grads`` (accumulated first with backward_passes_per_step), runs
        ``apply_owned(owned gradients, owned variables)`` and allgathers the parameters."""
        state = self._mpirep_zero
        if not _is_built(self):
            with tf.init_scope():
                self.build(variables)
        if [id(v) for v in variables] != [id(v) for v in state.variables]:
            raise ValueError(
                f"{_rank()}ZeroRedundancyOptimizer was built on other variables "
                "(or in another order) than it is asked to update; pass the same trainable "
                "variables, in the same order, at every step")
        plan = state.plan
        grads = [tf.convert_to_tensor(g) if isinstance(g, tf.IndexedSlices) else g
                 for g in grads]

        def reduce(gs):
            if state.plain:
                return list(gs)
            reduced = reduce_scatter(plan, gs, variables, state.op, state.compression,
                                     state.prescale, state.postscale, state.process_set)
            if state.accumulator is not None:  # tf.cond wants the same outputs either way
                reduced = [r if r is not None or g is None else tf.zeros_like(g)
                           for r, g in zip(reduced, gs)]
            return reduced

        def step(reduced):
            owned = [i for i in plan.owned if reduced[i] is not None]
            if owned:
                result = apply_owned([reduced[i] for i in owned], [variables[i] for i in owned])
            else:
                result = self.iterations.assign_add(1)
            if state.plain:
                return result
            with tf.control_dependencies([t for t in tf.nest.flatten(result)
                                          if isinstance(t, (tf.Tensor, tf.Operation))]):
                return gather_parameters(plan, variables, state.process_set)

        if state.accumulator is None:
            return step(reduce(grads))
        reduced = state.accumulator.accumulate_and_reduce(grads, variables, reduce)
        return state.accumulator.apply_when_reduced(
            lambda: step(reduced), lambda: self.iterations.assign_add(1), reduced)


def _own_variables(optimizer):
    variables = optimizer.variables
    return list(variables() if callable(variables) else variables)


class _ZeroKeras3(_Zero):
    def apply(self, grads, trainable_variables=None):
        if trainable_variables is None:
            trainable_variables = self._mpirep_zero.variables
        base_apply = super().apply
        self._mpirep_step(list(grads), list(trainable_variables),
                          lambda gs, vs: base_apply(gs, vs))


class _ZeroTfKeras(_Zero):
    def apply_gradients(self, grads_and_vars, *args, **kwargs):
        grads, variables = zip(*grads_and_vars)
        base_apply = super().apply_gradients
        self._mpirep_step(list(grads), list(variables),
                          lambda gs, vs: base_apply(zip(gs, vs), *args, **kwargs))
        return self.iterations


_classes = {}


def wrapper_class(base):
    from mpirep.tensorflow.optimizer import wrapping_class

    return wrapping_class(base, _Zero, _ZeroKeras3, _ZeroTfKeras, _classes)
