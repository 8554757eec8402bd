"""ZeroRedundancyOptimizer: data parallelism whose optimizer state is sharded across ranks, as
ZeRO stage 1 does (docs/zero.md).

Each rank owns pieces of the parameters (slices of the flattened variables for an element-wise
optimizer, whole variables otherwise; _zero_plan.py) and keeps the optimizer's slot variables
for those alone. A step reduce-scatters the gradients so that each rank gets the reduced
gradients of its own pieces, applies the wrapped optimizer to them, and allgathers the updated
parameters (_zero_exchange.py), exchange by exchange as backprop produces the gradients. Like
DistributedOptimizer's, the wrapper is a subclass of the optimizer's class with the same name,
so a saved model records a plain optimizer. At one rank, or on a rank outside its process set,
it is the plain optimizer.
"""

import numpy as np
import tensorflow as tf

import mpirep
from mpirep.tensorflow import _keras_accumulation, _zero_checkpoint, mpi_ops
from mpirep.tensorflow._accumulation import GradientAccumulator
from mpirep.tensorflow._trackables import SHARD_MARK, own_variables
from mpirep.tensorflow._zero_exchange import gather_parameters, reduce_scatter
from mpirep.tensorflow._zero_pieces import make_targets, refresh_slices
from mpirep.tensorflow._zero_plan import backprop_buckets, consecutive_groups, make_plan
from mpirep.tensorflow.compression import Compression
from mpirep.tensorflow.process_sets import global_process_set


# Each bucket is two collectives a step. Across two hosts at 1 Gbit/s, the MLP of
# benchmarks/zero_optimizer.py stepped as fast with buckets of 1 MiB as with 4 MiB, and 25%
# slower with one bucket of all its 24 MiB (docs/zero.md). ResNet-50 gets about 25 buckets.
DEFAULT_BUCKET_BYTES = 4 << 20

# Optimizers of Keras 3 and tf_keras whose update of an element depends only on that element's
# gradient, slots and the step: a slice of a variable updates as the whole variable would.
ELEMENT_WISE = {"SGD", "Adam", "AdamW", "Adamax", "Nadam", "RMSprop", "Adagrad", "Adadelta",
                "Ftrl", "Lion"}


def ZeroRedundancyOptimizer(optimizer, name=None, compression=Compression.none, op=None,
                            gradient_predivide_factor=1.0, backward_passes_per_step=1,
                            average_aggregated_gradients=False, num_groups=0,
                            process_set=global_process_set, shard="auto",
                            bucket_bytes=DEFAULT_BUCKET_BYTES):
    """A new optimizer like ``optimizer`` (same class and config, Keras 3 or tf_keras) that
    trains data-parallel over ``process_set`` keeping only its shard of the optimizer state;
    a built Keras 3 ``optimizer`` gives it its shard of its state.
    ``shard``: "slices" (equal slices of the flattened parameters, for element-wise
    optimizers), "variables" (whole variables, balanced by bytes, for any optimizer) or "auto"
    (slices where the optimizer is known to be element-wise). Slices are exchanged in buckets
    of at least ``bucket_bytes``, last variables first, each as soon as backprop has produced
    its gradients; whole variables in one exchange. ``num_groups`` = k exchanges k groups of
    consecutive variables instead. The other options are DistributedOptimizer's."""
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
                   num_groups=num_groups, process_set=process_set, shard=shard,
                   bucket_bytes=bucket_bytes)
    zero = attach(wrapper_class(type(optimizer)).from_config(config), **options)
    if _is_built(optimizer) and not isinstance(optimizer, _Zero) and \
            hasattr(optimizer, "_trainable_variables"):
        # A built Keras 3 optimizer (one load_model restored, say): keep this rank's shard.
        zero.build(optimizer._trainable_variables)
        zero.load_own_variables({str(i): v.numpy()
                                 for i, v in enumerate(own_variables(optimizer))})
    return zero


def attach(optimizer, compression=Compression.none, op=None, gradient_predivide_factor=1.0,
           backward_passes_per_step=1, average_aggregated_gradients=False, num_groups=0,
           process_set=global_process_set, shard="auto", bucket_bytes=DEFAULT_BUCKET_BYTES):
    if shard not in ("auto", "slices", "variables"):
        raise ValueError(f"{_rank()}shard is 'auto', 'slices' or 'variables', not {shard!r}")
    if shard == "slices" and getattr(optimizer, "clipnorm", None):
        raise ValueError(
            f"{_rank()}clipnorm clips each variable by its own norm, which a slice does not "
            "have: use shard='variables'")
    if backward_passes_per_step < 1:
        raise ValueError(f"{_rank()}backward_passes_per_step must be >= 1")
    _keras_accumulation.check_supported(optimizer, backward_passes_per_step)
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
    sliced = shard == "slices" or (shard == "auto" and _element_wise(optimizer))
    optimizer._mpirep_zero = _ZeroState(
        op, compression, 1.0 / gradient_predivide_factor, gradient_predivide_factor,
        num_groups, process_set, accumulator, sliced, bucket_bytes)
    return optimizer


def _element_wise(optimizer):
    """Whether ``optimizer`` is (not a subclass of) an element-wise Keras optimizer, without
    clipnorm, which clips each variable by its own norm."""
    base = next(c for c in type(optimizer).__mro__ if not issubclass(c, _Zero))
    library = base.__module__.split(".")[0]
    return (library in ("keras", "tf_keras") and base.__name__ in ELEMENT_WISE
            and not getattr(optimizer, "clipnorm", None))


def _rank():
    """The prefix that names this rank in an error message."""
    return f"rank {mpirep.rank()}: " if mpirep.is_initialized() else ""


class _ZeroState:
    def __init__(self, op, compression, prescale, postscale, num_groups, process_set,
                 accumulator, sliced, bucket_bytes):
        self.op = op
        self.compression = compression
        self.prescale = prescale
        self.postscale = postscale
        self.num_groups = num_groups
        self.process_set = process_set
        self.accumulator = accumulator
        self.keras_sums = None      # with Keras's gradient_accumulation_steps
        self.sliced = sliced
        self.bucket_bytes = bucket_bytes
        self.variables = None       # every trainable variable, in the order built with
        self.plan = None
        self.targets = None         # the variable updated for each piece of plan.owned
        self.piece_of = {}          # id(target) -> its Piece
        self.slot_keys = {}         # id(slot variable) -> (slot name, Piece)
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
        sizes = [int(np.prod(v.shape)) for v in self.variables]
        if self.num_groups or not self.sliced:
            groups = consecutive_groups(len(sizes), self.num_groups)
        else:
            groups = backprop_buckets([n * d.size for n, d in zip(sizes, dtypes)],
                                      self.bucket_bytes)
        self.plan = make_plan(sizes, [d.name for d in dtypes], [d.size for d in dtypes], size,
                              rank, groups, sliced=self.sliced)
        with tf.init_scope():
            self.targets = make_targets(self.plan, self.variables)
        self.piece_of = {id(t): piece for piece, t in zip(self.plan.owned, self.targets)}

    def record_slot(self, slot, reference, name):
        piece = self.piece_of.get(id(reference))
        if piece is not None:
            self.slot_keys[id(slot)] = (name, piece)
            setattr(slot, SHARD_MARK, True)   # never broadcast, whoever lists it (_trackables.py)

    def model_variable(self, variable):
        """The model's variable that ``variable`` (one of ``targets``) holds a piece of."""
        piece = self.piece_of.get(id(variable))
        return variable if piece is None else self.variables[piece.index]


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
        super().build(state.targets)

    def _use_weight_decay(self, variable):
        # A slice is excluded from weight decay as its variable is, by name or by identity.
        return super()._use_weight_decay(self._mpirep_zero.model_variable(variable))

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
        plan, targets = state.plan, state.targets
        grads = [tf.convert_to_tensor(g) if isinstance(g, tf.IndexedSlices) else g
                 for g in grads]

        def step(gs):
            """Reduces, applies and gathers; each variable's update is ordered after its
            reduction and before its gather by the variable's own reads and writes, so that
            every exchange goes ahead as soon as its own inputs exist."""
            if state.plain:
                reduced = [gs[piece.index] for piece in plan.owned]
            else:
                reduced = reduce_scatter(plan, gs, variables, state.op, state.compression,
                                         state.prescale, state.postscale, state.process_set)
            owned = [k for k, g in enumerate(reduced) if g is not None]
            with tf.control_dependencies(refresh_slices(plan, variables, targets)):
                if owned:
                    result = apply_owned([reduced[k] for k in owned],
                                         [targets[k] for k in owned])
                else:
                    result = self.iterations.assign_add(1)
            if state.plain:
                return result
            return result, gather_parameters(plan, variables, targets, state.process_set)

        keras_steps = _keras_accumulation.steps(self)
        if keras_steps and not state.plain:
            # Keras's accumulators hold pieces: the whole gradients are summed here, and
            # Keras's stay at zero (_keras_accumulation.py).
            if state.keras_sums is None:
                state.keras_sums = GradientAccumulator(keras_steps, average=False)
            return state.keras_sums.reduce_and_apply_every_nth(
                grads, variables, step, lambda: self._iterations.assign_add(1),
                due=_keras_accumulation.is_update_step(self))
        if state.accumulator is None:
            return step(grads)
        return state.accumulator.reduce_and_apply_every_nth(
            grads, variables, step, lambda: self.iterations.assign_add(1))


def _outside_strategies():
    """Whether no tf.distribute strategy is in scope: then the optimizer's sum of the gradients
    over replicas is over one replica, an identity, but one op that joins every gradient, so
    that no variable's update could start before the last exchange's reducescatter had ended,
    nor any exchange's allgather. The wrappers skip it there."""
    return not tf.distribute.has_strategy()


class _ZeroKeras3(_Zero):
    def _all_reduce_sum_gradients(self, grads_and_vars):
        if _outside_strategies():
            return list(grads_and_vars)
        return super()._all_reduce_sum_gradients(grads_and_vars)

    def apply(self, grads, trainable_variables=None):
        if trainable_variables is None:
            trainable_variables = self._mpirep_zero.variables
        base_apply = super().apply
        self._mpirep_step(list(grads), list(trainable_variables),
                          lambda gs, vs: base_apply(gs, vs))


class _ZeroTfKeras(_Zero):
    def aggregate_gradients(self, grads_and_vars):
        if _outside_strategies():
            return list(grads_and_vars)
        return super().aggregate_gradients(grads_and_vars)

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
