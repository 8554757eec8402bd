"""Collectives on TensorFlow tensors, eager and in graphs, with their gradients.

Signatures follow horovod.tensorflow. ``device_dense``/``device_sparse`` are accepted for
compatibility and ignored: the op runs where TensorFlow places its input.
"""

import numpy as np
import tensorflow as tf

import mpirep
from mpirep import session
from mpirep.tensorflow import _bridge
from mpirep.tensorflow._errors import to_tf_error
from mpirep.tensorflow._naming import reset_eager_names, tensor_name
from mpirep.tensorflow.compression import Compression
from mpirep.tensorflow.process_sets import global_process_set, resolve


try:  # whether any GradientTape is recording; private, so absent means "assume one is"
    from tensorflow.python.eager.record import could_possibly_record as _tape_may_record
except ImportError:
    try:  # TensorFlow 2.12 keeps it in the tape module
        from tensorflow.python.eager.tape import could_possibly_record as _tape_may_record
    except ImportError:  # pragma: no cover
        def _tape_may_record():
            return True

# Autograph would otherwise try to rewrite this library's Python when a user's tf.function calls it.
_not_autograph = tf.autograph.experimental.do_not_convert


class _AdasumOp:
    def __repr__(self):
        return "Adasum"


#: Horovod's Adasum reduction; accepted as a value, not yet implemented by the core.
Adasum = _AdasumOp()


def _resolve_op(op, average):
    if op is Adasum:
        raise NotImplementedError("mpirep does not implement Adasum yet; use Average or Sum")
    if op is not None and average is not None:
        raise ValueError("pass either op or the deprecated average, not both")
    if op is None:
        op = mpirep.Average if average in (None, True) else mpirep.Sum
    return op


def _differentiable(forward):
    """tf.custom_gradient(forward), except eagerly with no tape recording, where the gradient
    is never needed and custom_gradient's bookkeeping would cost more than the op."""
    def call(*xs):
        if tf.executing_eagerly() and not _tape_may_record():
            return forward(*xs)[0]
        return tf.custom_gradient(forward)(*xs)

    return call


class _Target:
    """Where an op runs: the bridge, and the process set's core id, this rank's number in it
    and its size."""

    __slots__ = ("bridge", "set_id", "rank", "size")

    def __init__(self, process_set):
        session._require_init()
        self.set_id, self.rank, self.size = resolve(process_set)
        self.bridge = _bridge.bridge()

    def run(self, collective, tensor, name, **kwargs):
        return self.bridge.run(collective, tensor, name, process_set=self.set_id, **kwargs)

    def run_group(self, collective, tensors, names, **kwargs):
        return self.bridge.run_group(collective, tensors, names, process_set=self.set_id,
                                     **kwargs)


def _prepare(process_set):
    return _Target(process_set)


def _allreduce(target, tensor, name, op, prescale_factor, postscale_factor):
    @_differentiable
    def forward(x):
        output, _ = target.run("allreduce", x, name, reduce_op=op, prescale=prescale_factor,
                               postscale=postscale_factor)

        def grad(dy):
            if op not in (mpirep.Sum, mpirep.Average):
                raise NotImplementedError("only Sum and Average allreduce have gradients")
            grad_name = tensor_name("allreduce.grad", set_id=target.set_id)
            return _allreduce(target, dy, grad_name, op, prescale_factor, postscale_factor)

        return output, grad

    return forward(tensor)


@_not_autograph
def allreduce(tensor, average=None, device_dense="", device_sparse="",
              compression=Compression.none, op=None, prescale_factor=1.0, postscale_factor=1.0,
              name=None, process_set=global_process_set, ignore_name_scope=False):
    """Reduces ``tensor`` over all ranks with ``op`` (default Average); every rank gets the
    result. A tf.IndexedSlices is gathered instead (values and indices), which Average and Sum
    allow."""
    op = _resolve_op(op, average)
    target = _prepare(process_set)
    if isinstance(tensor, tf.IndexedSlices):
        return _allreduce_sparse(tensor, op, prescale_factor, postscale_factor, name,
                                 process_set, ignore_name_scope, target.size)
    tensor = tf.convert_to_tensor(tensor)
    compressed, context = compression.compress(tensor)
    name = tensor_name("allreduce", name, ignore_name_scope, target.set_id)
    reduced = _allreduce(target, compressed, name, op, prescale_factor, postscale_factor)
    return compression.decompress(reduced, context)


def _allreduce_sparse(slices, op, prescale_factor, postscale_factor, name, process_set,
                      ignore_name_scope, set_size):
    if op not in (mpirep.Average, mpirep.Sum):
        raise NotImplementedError("allreduce of tf.IndexedSlices supports only Average and Sum")
    base = name or "allreduce_sparse"
    scale = prescale_factor * postscale_factor
    if op == mpirep.Average:
        scale /= set_size
    values = allgather(slices.values, name=f"{base}.values", process_set=process_set,
                       ignore_name_scope=ignore_name_scope)
    indices = allgather(slices.indices, name=f"{base}.indices", process_set=process_set,
                        ignore_name_scope=ignore_name_scope)
    if scale != 1.0:
        values = values * tf.cast(scale, values.dtype)
    return tf.IndexedSlices(values, indices, dense_shape=slices.dense_shape)


@_not_autograph
def grouped_allreduce(tensors, average=None, device_dense="", device_sparse="",
                      compression=Compression.none, op=None, prescale_factor=1.0,
                      postscale_factor=1.0, process_set=global_process_set, name=None):
    """Allreduces every tensor of the list together, so they fuse into few ring passes."""
    op = _resolve_op(op, average)
    target = _prepare(process_set)
    if not tensors:
        return []
    if any(isinstance(t, tf.IndexedSlices) for t in tensors):
        return [allreduce(t, op=op, compression=compression, prescale_factor=prescale_factor,
                          postscale_factor=postscale_factor, process_set=process_set)
                for t in tensors]
    compressed, contexts = zip(*(compression.compress(tf.convert_to_tensor(t)) for t in tensors))
    base = tensor_name("grouped_allreduce", name, set_id=target.set_id)
    reduced = _grouped_allreduce(target, list(compressed), base, op, prescale_factor,
                                 postscale_factor)
    return [compression.decompress(r, c) for r, c in zip(reduced, contexts)]


def _grouped_allreduce(target, tensors, base, op, prescale_factor, postscale_factor):
    names = [f"{base}.{i}" for i in range(len(tensors))]

    @_differentiable
    def forward(*xs):
        outputs = target.run_group("allreduce", list(xs), names, reduce_op=op,
                                   prescale=prescale_factor, postscale=postscale_factor)

        def grad(*dys):
            if op not in (mpirep.Sum, mpirep.Average):
                raise NotImplementedError("only Sum and Average allreduce have gradients")
            grad_base = tensor_name("grouped_allreduce.grad", set_id=target.set_id)
            return _grouped_allreduce(target, list(dys), grad_base, op, prescale_factor,
                                      postscale_factor)

        return outputs, grad

    return forward(*tensors)


@_not_autograph
def allgather(tensor, name=None, ignore_name_scope=False, process_set=global_process_set):
    """Concatenates every rank's tensor along the first dimension, in rank order; the first
    dimension may differ between ranks."""
    target = _prepare(process_set)
    tensor = tf.convert_to_tensor(tensor)
    name = tensor_name("allgather", name, ignore_name_scope, target.set_id)

    @_differentiable
    def forward(x):
        output, _ = target.run("allgather", x, name)

        def grad(dy):
            # Every rank's output feeds the loss, so this rank's rows receive the sum of their
            # gradients over all ranks.
            summed = allreduce(dy, op=mpirep.Sum, process_set=process_set)
            rows = allgather(tf.shape(x, out_type=tf.int64)[:1], process_set=process_set)
            start = tf.reduce_sum(rows[:target.rank])
            return tf.slice(summed, tf.concat([[start], tf.zeros([tf.rank(x) - 1], tf.int64)], 0),
                            tf.shape(x, out_type=tf.int64))

        return output, grad

    return forward(tensor)


@_not_autograph
def broadcast(tensor, root_rank, name=None, ignore_name_scope=False,
              process_set=global_process_set):
    """Every rank gets ``root_rank``'s tensor."""
    target = _prepare(process_set)
    tensor = tf.convert_to_tensor(tensor)
    name = tensor_name("broadcast", name, ignore_name_scope, target.set_id)

    @_differentiable
    def forward(x):
        output, _ = target.run("broadcast", x, name, root_rank=root_rank)

        def grad(dy):
            summed = allreduce(dy, op=mpirep.Sum, process_set=process_set)
            return summed if target.rank == root_rank else tf.zeros_like(summed)

        return output, grad

    return forward(tensor)


@_not_autograph
def reducescatter(tensor, device_dense="", compression=Compression.none, op=None, name=None,
                  process_set=global_process_set, ignore_name_scope=False, prescale_factor=1.0,
                  postscale_factor=1.0):
    """Reduces over all ranks and gives rank r its block of rows of the result (the first
    dim0 % size ranks get one row more)."""
    op = _resolve_op(op, None)
    if op not in (mpirep.Sum, mpirep.Average):
        raise NotImplementedError("reducescatter supports only Sum and Average")
    target = _prepare(process_set)
    tensor = tf.convert_to_tensor(tensor)
    name = tensor_name("reducescatter", name, ignore_name_scope, target.set_id)
    compressed, context = compression.compress(tensor)

    @_differentiable
    def forward(x):
        output, _ = target.run("reducescatter", x, name, reduce_op=op, prescale=prescale_factor,
                               postscale=postscale_factor)

        def grad(dy):
            gathered = allgather(dy, process_set=process_set)
            scale = prescale_factor * postscale_factor
            if op == mpirep.Average:
                scale /= target.size
            return gathered * tf.cast(scale, gathered.dtype) if scale != 1.0 else gathered

        return output, grad

    return compression.decompress(forward(compressed), context)


@_not_autograph
def alltoall(tensor, splits=None, name=None, ignore_name_scope=False,
             process_set=global_process_set):
    """Sends ``splits[i]`` rows to rank i and concatenates what arrives, in rank order. Without
    splits the first dimension is divided evenly. Returns the tensor, or ``(tensor,
    received_splits)`` when splits are given."""
    target = _prepare(process_set)
    tensor = tf.convert_to_tensor(tensor)
    name = tensor_name("alltoall", name, ignore_name_scope, target.set_id)
    if splits is None:
        split_tensor = _even_splits(tensor, target.size)
    else:
        split_tensor = tf.cast(tf.convert_to_tensor(splits), tf.int64)

    @_differentiable
    def forward(x):
        output, received = target.run("alltoall", x, name, splits=split_tensor)

        def grad(dy, _received_grad=None):
            # What came from rank i goes back to it: the reverse exchange, with the received
            # splits as the send splits.
            return alltoall(dy, splits=received, process_set=process_set)[0]

        return (output, received), grad

    output, received = forward(tensor)
    return output if splits is None else (output, received)


def _even_splits(tensor, size):
    rows = tensor.shape[0] if tensor.shape.rank else None
    if tensor.shape.rank == 0 or (rows is not None and rows % size):
        raise tf.errors.InvalidArgumentError(
            None, None, f"rank {session.rank()}: alltoall without splits needs a first "
            f"dimension divisible by the number of ranks ({size}), got shape {tensor.shape}")
    return tf.fill([size], tf.shape(tensor, out_type=tf.int64)[0] // size)


@_not_autograph
def join():
    """Says this rank has run out of data and waits until every rank has said so; returns the
    rank that joined last, as an int32 scalar tensor (Horovod's join).

    Until then this rank takes part in the other ranks' collectives without issuing them:
    with zeros in allreduce and reducescatter (Average still divides by every rank), with no
    rows in allgather; alltoall, and a broadcast whose root has joined, fail meanwhile. The
    ranks that stopped early hold older weights: broadcast them from the returned rank.
    Eagerly it runs at once; in a graph it is an op (order it after the rank's last step)."""
    session._require_init()
    if tf.executing_eagerly():
        return tf.constant(_join_now(), tf.int32)
    last = tf.numpy_function(lambda: np.int32(_join_now()), [], tf.int32, stateful=True,
                             name="mpirep_join")
    last.set_shape([])
    return last


def _join_now():
    try:
        last = mpirep.join()
    except mpirep.MpirepError as error:
        raise to_tf_error(error) from None
    # Every rank's work is finished here, so ranks that issued different numbers of unnamed
    # eager ops start numbering them again in step.
    reset_eager_names()
    return last
