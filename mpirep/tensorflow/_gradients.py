"""Averaging gradients across ranks: what DistributedOptimizer and DistributedGradientTape share."""

import tensorflow as tf

import mpirep
from mpirep.tensorflow import mpi_ops
from mpirep.tensorflow.compression import Compression
from mpirep.tensorflow.process_sets import global_process_set


class GradientReducer:
    """Reduces a list of gradients (None entries pass through). Dense gradients go as grouped
    allreduces; tf.IndexedSlices are gathered, or densified first with ``sparse_as_dense``."""

    def __init__(self, compression=Compression.none, sparse_as_dense=False, op=None,
                 gradient_predivide_factor=1.0, num_groups=0, groups=None,
                 process_set=global_process_set):
        self.op = mpi_ops._resolve_op(op, None)
        if gradient_predivide_factor != 1.0 and self.op != mpirep.Average:
            raise ValueError("gradient_predivide_factor needs op=Average")
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

    def __call__(self, grads, variables=None):
        grads = list(grads)
        if self.sparse_as_dense:
            grads = [tf.convert_to_tensor(g) if isinstance(g, tf.IndexedSlices) else g
                     for g in grads]
        reduced = list(grads)
        for indices in self._dense_groups(grads, variables):
            outputs = mpi_ops.grouped_allreduce(
                [grads[i] for i in indices], op=self.op, compression=self.compression,
                prescale_factor=self.prescale, postscale_factor=self.postscale,
                process_set=self.process_set, name="gradients")
            for i, output in zip(indices, outputs):
                reduced[i] = output
        for i, grad in enumerate(grads):
            if isinstance(grad, tf.IndexedSlices):
                reduced[i] = mpi_ops.allreduce(
                    grad, op=self.op, prescale_factor=self.prescale,
                    postscale_factor=self.postscale, process_set=self.process_set,
                    name="sparse_gradient")
        return reduced

    def _dense_groups(self, grads, variables):
        dense = [i for i, g in enumerate(grads) if g is not None
                 and not isinstance(g, tf.IndexedSlices)]
        if self.groups is not None and variables is not None:
            position = {id(v): i for i, v in enumerate(variables)}
            explicit = [[position[id(v)] for v in group if position.get(id(v)) in dense]
                        for group in self.groups]
            grouped = {i for group in explicit for i in group}
            return [g for g in explicit if g] + [[i] for i in dense if i not in grouped]
        if self.num_groups:
            size = -(-len(dense) // self.num_groups)
            return [dense[k:k + size] for k in range(0, len(dense), size)]
        return [dense] if dense else []
