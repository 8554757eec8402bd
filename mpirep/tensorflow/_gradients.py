"""Averaging gradients across ranks: what DistributedOptimizer and DistributedGradientTape share."""

import tensorflow as tf

import mpirep
from mpirep.tensorflow import _bridge, _xla, mpi_ops
from mpirep.tensorflow.compression import Compression
from mpirep.tensorflow.process_sets import global_process_set


class GradientReducer:
    """Reduces a list of gradients (None entries pass through). tf.IndexedSlices are gathered,
    or densified first with ``sparse_as_dense``. Dense gradients are grouped as in Horovod:
    by default each is its own allreduce, which in a graph starts as soon as backprop has
    produced that gradient (the core fuses those that arrive together); ``num_groups`` = k
    makes k groups of consecutive gradients, and ``groups`` lists of variables, each group
    submitted together once all its gradients exist. On the numpy bridge, whose calls hold a
    thread while they wait, the default is one call for every gradient instead.

    On a set of one rank the gradients come back as they are (``_has_one_rank``).

    As in Horovod, the gradients of local sources (variables a rank keeps to itself, such as a
    model-parallel layer's) are not reduced but divided by the set's size when
    ``scale_local_gradients``, and a rank outside the process set gets its gradients back
    unreduced."""

    def __init__(self, compression=Compression.none, sparse_as_dense=False, op=None,
                 gradient_predivide_factor=1.0, num_groups=0, groups=None,
                 process_set=global_process_set, scale_local_gradients=True):
        self.op = mpi_ops._resolve_op(op, None)
        if gradient_predivide_factor != 1.0 and self.op != mpirep.Average:
            raise ValueError("gradient_predivide_factor needs op=Average")
        if isinstance(groups, int):  # Horovod's groups may be a number of groups
            num_groups, groups = groups, None
        if num_groups and groups is not None:
            raise ValueError("pass either num_groups or groups, not both")
        self.compression = compression
        self.sparse_as_dense = sparse_as_dense
        # Dividing before the sum and multiplying after keeps large gradient sums in range.
        self.prescale = 1.0 / gradient_predivide_factor
        self.postscale = gradient_predivide_factor
        self.num_groups = num_groups
        self.groups = groups
        self.process_set = process_set
        self.scale_local_gradients = scale_local_gradients

    def __call__(self, grads, variables=None, local_sources=None):
        """``local_sources``: a VariableSet of the variables whose gradients stay local."""
        grads = list(grads)
        if _has_one_rank(self.process_set):
            return grads
        # Under XLA a sparse gradient's allgather cannot be compiled (its rows depend on the
        # other ranks), so it is reduced dense there.
        if self.sparse_as_dense or _xla.tracing_for_xla():
            grads = [tf.convert_to_tensor(g) if isinstance(g, tf.IndexedSlices) else g
                     for g in grads]
        local = ({i for i, v in enumerate(variables) if v in local_sources}
                 if local_sources else set())
        reduced = list(grads)
        if self.process_set.included():
            shared = [i for i, g in enumerate(grads) if g is not None and i not in local]
            self._reduce(grads, variables, shared, reduced)
        if self.scale_local_gradients:
            for i in local:
                if grads[i] is not None:
                    reduced[i] = _divided(grads[i], self.process_set.size())
        return reduced

    def _reduce(self, grads, variables, shared, reduced):
        dense = [i for i in shared if not isinstance(grads[i], tf.IndexedSlices)]
        for indices in self._dense_groups(dense, variables):
            # Named after its first gradient: eagerly a name is used as given, and every
            # group needs its own.
            outputs = mpi_ops.grouped_allreduce(
                [grads[i] for i in indices], op=self.op, compression=self.compression,
                prescale_factor=self.prescale, postscale_factor=self.postscale,
                process_set=self.process_set, name=f"gradients.{indices[0]}")
            for i, output in zip(indices, outputs):
                reduced[i] = output
        for i in shared:
            if isinstance(grads[i], tf.IndexedSlices):
                # Gathering adds nothing up, so gradient_predivide_factor has nothing to guard.
                reduced[i] = mpi_ops.allreduce(grads[i], op=self.op,
                                               process_set=self.process_set,
                                               name="sparse_gradient")

    def _dense_groups(self, dense, variables):
        if self.groups is not None and variables is not None:
            position = {id(v): i for i, v in enumerate(variables)}
            explicit = [[position[id(v)] for v in group if position.get(id(v)) in dense]
                        for group in self.groups]
            grouped = {i for group in explicit for i in group}
            return [g for g in explicit if g] + [[i] for i in dense if i not in grouped]
        if self.num_groups:
            size = -(-len(dense) // self.num_groups)
            return [dense[k:k + size] for k in range(0, len(dense), size)]
        # A custom call under XLA blocks its thread: one per gradient would take a negotiation
        # round each, one after another.
        if _xla.tracing_for_xla() or _bridge.bridge().holds_a_thread_while_waiting:
            return [dense] if dense else []
        return [[i] for i in dense]


def _has_one_rank(process_set):
    """Whether ``process_set`` (registered) has a single rank. Every reduction over one rank is
    the identity, so its gradients come back as they are: no collective, no compression round
    trip, no scaling, no densifying; the step is the plain TensorFlow step.

    Decided in Python, when a step is traced, not by a condition on the size at run time
    (Horovod's way in its elastic mode), because mpirep's job keeps its size under a traced
    step: an elastic job grows or shrinks by starting new processes (docs/elastic.md), which
    trace their steps afresh. Only ``mpirep.shutdown()`` then ``init()`` on a communicator of
    another size changes it in a process, and steps traced before then must be traced again,
    as set membership and the scaling of local gradients are decided at trace time too. A tf.cond
    around each collective would also end the overlap of jobs with more ranks: TensorFlow
    chains the cond ops in program order, out of reach of _graph_order.py's exemption."""
    return process_set.process_set_id is not None and process_set.size() == 1


def _divided(grad, divisor):
    if isinstance(grad, tf.IndexedSlices):
        return tf.IndexedSlices(grad.values / divisor, grad.indices, grad.dense_shape)
    return grad / divisor


class VariableSet:
    """Variables (or tensors) by identity. Keras 3's variables are neither hashable nor have
    tf.Variable's ref(); the set keeps the objects, so an id is never reused meanwhile."""

    def __init__(self, variables=()):
        self._by_id = {}
        for variable in variables:
            self.add(variable)

    def add(self, variable):
        self._by_id[id(variable)] = variable

    def __contains__(self, variable):
        return self._by_id.get(id(variable)) is variable

    def __len__(self):
        return len(self._by_id)
