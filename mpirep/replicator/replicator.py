"""The Replicator: one replica of the user's step per MPI process, with averaged gradients and
collectives the step can call."""

import contextlib

import tensorflow as tf

import mpirep
from mpirep._core_loader import core
from mpirep.collectives import reduce_op
from mpirep.replicator import input as _input
from mpirep.tensorflow import functions, mpi_ops
from mpirep.tensorflow.basics import init
from mpirep.tensorflow.optimizer import DistributedOptimizer

# TF-Replicator's and tf.distribute's names for the reductions, and the core's.
_OP_NAMES = {"sum": "Sum", "mean": "Average", "average": "Average", "min": "Min", "max": "Max",
             "product": "Product"}


def _broadcastable_dtype(dtype):
    """Whether the core has the dtype (it has numpy's names); other variables, e.g. uint32
    random-seed states, stay per replica."""
    return dtype.base_dtype.name in core().DTYPES


def _reduce_op(op):
    """An mpirep op from "sum"/"mean"/"min"/"max"/"product", a tf.distribute.ReduceOp, or an
    mpirep op itself."""
    if isinstance(op, tf.distribute.ReduceOp):
        op = op.value
    if isinstance(op, str):
        try:
            return reduce_op(_OP_NAMES[op.lower()])
        except KeyError:
            raise ValueError(f"unknown reduce op {op!r}; use one of {sorted(_OP_NAMES)}") from None
    return op


def _broadcastable(variable):
    return _broadcastable_dtype(variable.dtype)


class Replicator:
    """Runs a step function as one replica per process: ``num_replicas`` replicas, this one
    ``replica_id``; replica 0 is the chief. The same script runs at one process or many."""

    def __init__(self):
        if not mpirep.is_initialized():
            init()
        self.num_replicas = mpirep.size()
        self.replica_id = mpirep.rank()
        self.is_chief = self.replica_id == 0
        self._unsynced = []  # created in context(), not yet broadcast from the chief
        self._iterators = {}

    # Variables

    @contextlib.contextmanager
    def context(self):
        """Create models and optimizers in here: their variables take the chief's values before
        the next step runs."""
        with tf.variable_creator_scope(self._record):
            yield self

    scope = context

    def _record(self, next_creator, **kwargs):
        variable = next_creator(**kwargs)
        self._unsynced.append(variable)
        return variable

    def _sync_recorded(self):
        variables = [v for v in self._unsynced if _broadcastable(v)]
        self._unsynced = []
        if variables:
            # Eagerly even while a tf.function traces the step, so this runs once, before it.
            with tf.init_scope():
                functions.broadcast_variables(variables, root_rank=0)

    @staticmethod
    def _create_from_chief(next_creator, **kwargs):
        """Variables that a step creates (lazily built layers, optimizer slots) start from the
        chief's initial value, before their first use."""
        initial = kwargs.get("initial_value")
        dtype = kwargs.get("dtype")

        def chief_value():
            value = tf.convert_to_tensor(initial() if callable(initial) else initial, dtype=dtype)
            if not _broadcastable_dtype(value.dtype):
                return value
            return mpi_ops.broadcast(value, root_rank=0)

        if initial is not None:
            kwargs["initial_value"] = chief_value
        return next_creator(**kwargs)

    def wrap_optimizer(self, optimizer):
        """A copy of a Keras 3 or tf_keras optimizer (same class and config) that averages
        gradients over the replicas before applying them. Use the returned optimizer."""
        return DistributedOptimizer(optimizer)

    # Running steps

    def input_context(self):
        return _input.InputContext(self.num_replicas, self.replica_id)

    def distribute_dataset(self, dataset, global_batch_size):
        """This replica's batches of ``dataset`` (see mpirep.replicator.input.distribute_dataset):
        per-replica batches of global_batch_size / num_replicas, the same number on every
        replica. Shuffle ``dataset`` with the same seed on every replica before this."""
        return _input.distribute_dataset(dataset, global_batch_size, self.input_context())

    def run(self, step_fn, input_fn=None, args=(), kwargs=None):
        """Runs ``step_fn`` on this replica and returns its result. With ``input_fn`` (called once
        with an InputContext, returning a dataset or other iterable) the step's first argument is
        the next element of that input. Works eagerly and inside tf.function."""
        self._sync_recorded()
        if input_fn is not None:
            args = (self._next_input(input_fn),) + tuple(args)
        with tf.variable_creator_scope(self._create_from_chief):
            return step_fn(*args, **(kwargs or {}))

    def _next_input(self, input_fn):
        if input_fn not in self._iterators:
            with tf.init_scope():
                self._iterators[input_fn] = iter(input_fn(self.input_context()))
        return next(self._iterators[input_fn])

    # Collectives, with gradients, inside or outside a step; nested structures allowed.

    def all_reduce(self, value, op="sum"):
        """``value`` reduced over the replicas by ``op``; gradients for "sum" and "mean"."""
        flat = tf.nest.flatten(value)
        reduced = mpi_ops.grouped_allreduce(flat, op=_reduce_op(op))
        return tf.nest.pack_sequence_as(value, reduced)

    def broadcast(self, value, root=0):
        """Replica ``root``'s ``value`` on every replica; the gradient sums at the root."""
        return tf.nest.map_structure(
            lambda v: mpi_ops.broadcast_with_summed_gradient(v, root_rank=root), value)

    def all_gather(self, value, axis=0):
        """Every replica's ``value`` concatenated along ``axis``, in replica order."""
        def gather(v):
            v = tf.convert_to_tensor(v)
            if axis == 0:
                return mpi_ops.allgather_with_summed_gradient(v)
            moved = tf.experimental.numpy.moveaxis(v, axis, 0)
            gathered = mpi_ops.allgather_with_summed_gradient(moved)
            return tf.experimental.numpy.moveaxis(gathered, 0, axis)

        return tf.nest.map_structure(gather, value)

    def moments(self, x, axes, keepdims=False):
        """Mean and variance of ``x`` over ``axes`` and over every replica's ``x``: the batch
        statistics of cross-replica batch norm. Replicas may hold batches of different sizes."""
        local_sum = tf.reduce_sum(x, axes, keepdims=True)
        count = tf.cast(tf.size(x) // tf.size(local_sum), x.dtype)
        # One allreduce for the sum and the count together.
        totals = self.all_reduce(tf.concat([tf.reshape(local_sum, [-1]), [count]], 0))
        mean = tf.reshape(totals[:-1], tf.shape(local_sum)) / totals[-1]
        squares = self.all_reduce(tf.reduce_sum(tf.square(x - mean), axes, keepdims=True))
        variance = squares / totals[-1]
        if not keepdims:
            mean, variance = tf.squeeze(mean, axes), tf.squeeze(variance, axes)
        return mean, variance

    # Reporting

    def reduce(self, op, value):
        """A per-replica result (e.g. what run returned) reduced over the replicas by ``op``;
        every replica gets it."""
        return self.all_reduce(value, op)

    def gather(self, value, axis=0):
        """Every replica's result, concatenated along ``axis`` in replica order."""
        return self.all_gather(value, axis)

    # Elastic training (docs/elastic.md)

    def elastic_state(self, *trackables, **attributes):
        """A state that elastic training commits, restores and syncs: the variables of
        ``trackables`` (models, optimizers, tf.Modules; optimizers are built first, so that
        their slots are kept too) and the ``attributes`` (``step=0``).  Run the training
        function under ``mpirep.elastic.run`` and call ``state.commit()`` as it goes."""
        from mpirep.tensorflow._trackables import build_optimizer, tracked_variables
        from mpirep.tensorflow.elastic import TensorFlowState

        optimizers = [t for t in trackables if hasattr(t, "apply_gradients")]
        trainable = [v for t in trackables if t not in optimizers for v in t.trainable_variables]
        for optimizer in optimizers:
            build_optimizer(optimizer, trainable)
        return TensorFlowState(tracked_variables(trackables), **attributes)

    # Checkpoints and the end

    def save(self, checkpoint, file_prefix):
        """Saves ``checkpoint`` (a tf.train.Checkpoint) on the chief only and returns the path it
        wrote on every replica, once it is written."""
        path = checkpoint.save(file_prefix) if self.is_chief else None
        return functions.broadcast_object(path, root_rank=0, name="replicator.save")

    def shutdown(self):
        """Ends mpirep on this process (collective: every replica calls it)."""
        mpirep.shutdown()
