"""Collectives on TensorFlow tensors, eagerly and in graphs, with their gradients.

Signatures and gradients follow horovod.tensorflow. ``device_dense``/``device_sparse`` are
accepted for compatibility and ignored: the op runs where TensorFlow places its input.

Every gradient issues the same collectives on every rank whatever the values involved: in a
graph a rank that skipped one would leave the others waiting for it.
"""

import numpy as np
import tensorflow as tf

import mpirep
from mpirep import session
from mpirep.tensorflow import _bridge, _xla
from mpirep.tensorflow._errors import to_tf_error
from mpirep.tensorflow._naming import tensor_name
from mpirep.tensorflow.compression import Compression
from mpirep.tensorflow.process_sets import global_process_set, resolve, set_root


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
    """Where an op runs: the bridge (or, in a function that XLA compiles, mpirep's XLA
    kernels), and the process set's core id, this rank's number in it and its size."""

    __slots__ = ("bridge", "set_id", "rank", "size")

    def __init__(self, process_set):
        session._require_init()
        self.set_id, self.rank, self.size = resolve(process_set)
        self.bridge = _bridge.bridge()

    def root(self, root_rank):
        """The set's own number for the global rank ``root_rank``."""
        return set_root(self.set_id, root_rank)

    def run(self, collective, tensor, name, **kwargs):
        if _xla.tracing_for_xla():
            _xla.check(collective, [tf.convert_to_tensor(tensor)])
            output, = _xla.run_group(collective, [tensor], [name], process_set=self.set_id,
                                     **kwargs)
            return output, tf.zeros([0], tf.int64)
        return self.bridge.run(collective, tensor, name, process_set=self.set_id, **kwargs)

    def run_group(self, collective, tensors, names, **kwargs):
        if _xla.tracing_for_xla():
            return _xla.run_group(collective, tensors, names, group=names[0] if names else "",
                                  process_set=self.set_id, **kwargs)
        return self.bridge.run_group(collective, tensors, names, process_set=self.set_id,
                                     **kwargs)


def _prepare(process_set):
    return _Target(process_set)


def _group_names(kind, name, ignore_name_scope, target, count):
    base = tensor_name(kind, name, ignore_name_scope, target.set_id)
    return [f"{base}.{i}" for i in range(count)]


def _compressed(compression, tensors, collective):
    """collective(list of tensors) applied to the compressed tensors, decompressed."""
    sent, contexts = zip(*(compression.compress(tf.convert_to_tensor(t)) for t in tensors))
    return [compression.decompress(y, c) for y, c in zip(collective(list(sent)), contexts)]


def _scaled(tensor, factor):
    """``tensor * factor`` as the core scales: integers in double precision, truncated toward
    zero (a factor below 1 must not become 0 first); float16 and bfloat16 in float32."""
    if factor == 1.0:
        return tensor
    if tensor.dtype in (tf.float16, tf.bfloat16):
        wide = tf.float32
    elif tensor.dtype.is_floating or tensor.dtype.is_complex:
        return tensor * tf.cast(factor, tensor.dtype)
    else:
        wide = tf.float64
    return tf.cast(tf.cast(tensor, wide) * tf.cast(factor, wide), tensor.dtype)


def _after(dependency, tensor_fn):
    """tensor_fn()'s value, computed only once ``dependency`` has run: a value that does not
    depend on a collective's result must still make every rank run that collective."""
    with tf.control_dependencies([dependency]):
        return tensor_fn()


def _first_dim_offsets(target, tensors, process_set):
    """For each tensor, where this rank's rows start in the allgather of it over the set."""
    rows = tf.stack([tf.shape(t, out_type=tf.int64)[0] for t in tensors])
    everyone = allgather(tf.expand_dims(rows, 0), process_set=process_set)
    return tf.reduce_sum(everyone[:target.rank], axis=0)


def _own_rows(gathered, tensor, start):
    begin = tf.concat([[start], tf.zeros([tf.rank(tensor) - 1], tf.int64)], 0)
    return tf.slice(gathered, begin, tf.shape(tensor, out_type=tf.int64))


# allreduce

def _allreduce_group(target, tensors, names, op, prescale_factor, postscale_factor):
    @_differentiable
    def forward(*xs):
        outputs = target.run_group("allreduce", list(xs), names, reduce_op=op,
                                   prescale=prescale_factor, postscale=postscale_factor)

        def grad(*dys):
            if op not in (mpirep.Sum, mpirep.Average):
                raise NotImplementedError("only Sum and Average allreduce have gradients")
            grad_names = _group_names("allreduce.grad", None, False, target, len(dys))
            return _allreduce_group(target, list(dys), grad_names, op, prescale_factor,
                                    postscale_factor)

        return outputs, grad

    return list(forward(*tensors))


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
        return _allreduce_sparse([tensor], op, prescale_factor, postscale_factor, name,
                                 ignore_name_scope, process_set, target.size)[0]
    name = tensor_name("allreduce", name, ignore_name_scope, target.set_id)
    return _allreduce_dense(target, [tensor], [name], op, prescale_factor, postscale_factor,
                            compression)[0]


def _allreduce_dense(target, tensors, names, op, prescale_factor, postscale_factor,
                     compression):
    return _compressed(compression, tensors, lambda xs: _allreduce_group(
        target, xs, names, op, prescale_factor, postscale_factor))


def _allreduce_sparse(slices, op, prescale_factor, postscale_factor, name, ignore_name_scope,
                      process_set, set_size):
    """Sum or Average of tf.IndexedSlices: the values and indices of every rank gathered,
    Average dividing the values by the set's size (true division, as in Horovod: integer values
    come back as floats)."""
    if op not in (mpirep.Average, mpirep.Sum):
        raise NotImplementedError("allreduce of tf.IndexedSlices supports only Average and Sum")
    if prescale_factor != 1.0 or postscale_factor != 1.0:
        raise NotImplementedError("prescale_factor and postscale_factor are not supported with "
                                  "tf.IndexedSlices (as in Horovod): scale the values instead")
    base = name or "allreduce_sparse"
    values = grouped_allgather([s.values for s in slices], name=f"{base}.values",
                               process_set=process_set, ignore_name_scope=ignore_name_scope)
    indices = grouped_allgather([s.indices for s in slices], name=f"{base}.indices",
                                process_set=process_set, ignore_name_scope=ignore_name_scope)
    if op == mpirep.Average:
        values = [v / tf.cast(set_size, v.dtype) for v in values]
    return [tf.IndexedSlices(v, i, dense_shape=s.dense_shape)
            for v, i, s in zip(values, indices, slices)]


@_not_autograph
def grouped_allreduce(tensors, average=None, device_dense="", device_sparse="",
                      compression=Compression.none, op=None, prescale_factor=1.0,
                      postscale_factor=1.0, process_set=global_process_set,
                      ignore_name_scope=False, name=None):
    """Allreduces every tensor of the list together, so they fuse into few ring passes;
    tf.IndexedSlices among them are gathered (see allreduce)."""
    op = _resolve_op(op, average)
    target = _prepare(process_set)
    tensors = list(tensors)
    if not tensors:
        return []
    sparse = [i for i, t in enumerate(tensors) if isinstance(t, tf.IndexedSlices)]
    dense = [i for i in range(len(tensors)) if i not in sparse]
    results = [None] * len(tensors)
    if sparse:
        base = tensor_name("grouped_allreduce_sparse", name, ignore_name_scope, target.set_id)
        for i, output in zip(sparse, _allreduce_sparse(
                [tensors[i] for i in sparse], op, prescale_factor, postscale_factor, base,
                ignore_name_scope, process_set, target.size)):
            results[i] = output
    if dense:
        names = _group_names("grouped_allreduce", name, ignore_name_scope, target, len(dense))
        for i, output in zip(dense, _allreduce_dense(
                target, [tensors[i] for i in dense], names, op, prescale_factor,
                postscale_factor, compression)):
            results[i] = output
    return results


# allgather

def _allgather_group(target, tensors, names, process_set, gradient_op):
    @_differentiable
    def forward(*xs):
        outputs = target.run_group("allgather", list(xs), names)

        def grad(*dys):
            # Every rank's copy of the output brings a gradient: reduced over the set by
            # gradient_op, of which each rank takes its own rows.
            reduced = grouped_allreduce(list(dys), op=gradient_op, process_set=process_set)
            starts = _first_dim_offsets(target, xs, process_set)
            return [_own_rows(g, x, starts[i]) for i, (g, x) in enumerate(zip(reduced, xs))]

        return outputs, grad

    return list(forward(*tensors))


def _allgather(tensor, name, ignore_name_scope, process_set, gradient_op):
    target = _prepare(process_set)
    name = tensor_name("allgather", name, ignore_name_scope, target.set_id)
    return _allgather_group(target, [tf.convert_to_tensor(tensor)], [name], process_set,
                            gradient_op)[0]


@_not_autograph
def allgather(tensor, name=None, ignore_name_scope=False, process_set=global_process_set):
    """Concatenates every rank's tensor along the first dimension, in rank order; the first
    dimension may differ between ranks. The gradient is Horovod's: the incoming gradients
    averaged over the set."""
    return _allgather(tensor, name, ignore_name_scope, process_set, mpirep.Average)


@_not_autograph
def allgather_with_summed_gradient(tensor, name=None, process_set=global_process_set):
    """allgather whose gradient sums the incoming gradients over the set: the gradient of the
    sum of every rank's loss, the convention of the Replicator and of SyncBatchNormalization."""
    return _allgather(tensor, name, False, process_set, mpirep.Sum)


@_not_autograph
def grouped_allgather(tensors, name=None, ignore_name_scope=False,
                      process_set=global_process_set):
    """allgather of every tensor of the list, submitted together."""
    target = _prepare(process_set)
    tensors = [tf.convert_to_tensor(t) for t in tensors]
    if not tensors:
        return []
    names = _group_names("grouped_allgather", name, ignore_name_scope, target, len(tensors))
    return _allgather_group(target, tensors, names, process_set, mpirep.Average)


# broadcast

def _broadcast(tensor, root_rank, name, ignore_name_scope, process_set, gradient_op):
    target = _prepare(process_set)
    root = target.root(root_rank)
    tensor = tf.convert_to_tensor(tensor)
    name = tensor_name("broadcast", name, ignore_name_scope, target.set_id)

    @_differentiable
    def forward(x):
        output, _ = target.run("broadcast", x, name, root_rank=root)

        def grad(dy):
            reduced = allreduce(dy, op=gradient_op, process_set=process_set)
            if target.rank == root:
                return reduced
            return _after(reduced, lambda: tf.zeros_like(dy))

        return output, grad

    return forward(tensor)


@_not_autograph
def broadcast(tensor, root_rank, name=None, ignore_name_scope=False,
              process_set=global_process_set):
    """Every rank gets the tensor of global rank ``root_rank`` (a member of the set). The
    gradient is Horovod's: at the root the incoming gradients averaged over the set, zeros
    elsewhere."""
    return _broadcast(tensor, root_rank, name, ignore_name_scope, process_set, mpirep.Average)


@_not_autograph
def broadcast_with_summed_gradient(tensor, root_rank, name=None,
                                   process_set=global_process_set):
    """broadcast whose gradient at the root sums the incoming gradients over the set (the
    Replicator's convention)."""
    return _broadcast(tensor, root_rank, name, False, process_set, mpirep.Sum)


# reduce

@_not_autograph
def reduce(tensor, root_rank=0, op=None, name=None, process_set=global_process_set,
           ignore_name_scope=False, prescale_factor=1.0, postscale_factor=1.0):
    """Reduces ``tensor`` over the set's ranks with ``op`` (default Average) onto global rank
    ``root_rank`` (a member of the set): the root gets the result, every other rank zeros of
    the tensor's shape. For Sum and Average the gradient is the root's incoming gradient,
    broadcast from the root and scaled as the forward pass scaled each input; Min, Max and
    Product have none."""
    op = _resolve_op(op, None)
    target = _prepare(process_set)
    root = target.root(root_rank)
    tensor = tf.convert_to_tensor(tensor)
    name = tensor_name("reduce", name, ignore_name_scope, target.set_id)

    @_differentiable
    def forward(x):
        output, _ = target.run("reduce", x, name, reduce_op=op, root_rank=root,
                               prescale=prescale_factor, postscale=postscale_factor)

        def grad(dy):
            if op not in (mpirep.Sum, mpirep.Average):
                raise NotImplementedError("the gradient of reduce is defined for Sum and Average")
            scale = prescale_factor * postscale_factor / (target.size if op == mpirep.Average else 1)
            return _scaled(broadcast(dy, root_rank, process_set=process_set), scale)

        return output, grad

    return forward(tensor)


# reducescatter

def _reducescatter_group(target, tensors, names, op, prescale_factor, postscale_factor,
                         process_set):
    @_differentiable
    def forward(*xs):
        outputs = target.run_group("reducescatter", list(xs), names, reduce_op=op,
                                   prescale=prescale_factor, postscale=postscale_factor)

        def grad(*dys):
            # Horovod's convention: Sum scales the gradient by the set's size, Average does not.
            scale = prescale_factor * postscale_factor
            if op == mpirep.Sum:
                scale *= target.size
            return grouped_allgather([_scaled(dy, scale) for dy in dys], process_set=process_set)

        return outputs, grad

    return list(forward(*tensors))


@_not_autograph
def reducescatter(tensor, device_dense="", compression=Compression.none, op=None, name=None,
                  process_set=global_process_set, ignore_name_scope=False, prescale_factor=1.0,
                  postscale_factor=1.0):
    """Reduces over all ranks (Average by default, or Sum) and gives rank r its block of rows
    of the result (the first dim0 % size ranks get one row more)."""
    op = _reducescatter_op(op)
    target = _prepare(process_set)
    name = tensor_name("reducescatter", name, ignore_name_scope, target.set_id)
    return _reducescatter_dense(target, [tensor], [name], op, prescale_factor, postscale_factor,
                                compression, process_set)[0]


@_not_autograph
def grouped_reducescatter(tensors, device_dense="", compression=Compression.none, op=None,
                          process_set=global_process_set, prescale_factor=1.0,
                          postscale_factor=1.0, name=None, ignore_name_scope=False):
    """reducescatter of every tensor of the list, submitted together."""
    op = _reducescatter_op(op)
    target = _prepare(process_set)
    tensors = list(tensors)
    if not tensors:
        return []
    names = _group_names("grouped_reducescatter", name, ignore_name_scope, target, len(tensors))
    return _reducescatter_dense(target, tensors, names, op, prescale_factor, postscale_factor,
                                compression, process_set)


def _reducescatter_op(op):
    op = _resolve_op(op, None)
    if op not in (mpirep.Sum, mpirep.Average):
        raise NotImplementedError("reducescatter supports only Sum and Average")
    return op


def _reducescatter_dense(target, tensors, names, op, prescale_factor, postscale_factor,
                         compression, process_set):
    return _compressed(compression, tensors, lambda xs: _reducescatter_group(
        target, xs, names, op, prescale_factor, postscale_factor, process_set))


# alltoall

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


# join

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
    if _xla.tracing_for_xla():
        _xla.check("join", [])
    last = tf.numpy_function(lambda: np.int32(_join_now()), [], tf.int32, stateful=True,
                             name="mpirep_join")
    last.set_shape([])
    return last


def _join_now():
    """mpirep.join, which also numbers unnamed eager ops from zero again on every rank."""
    try:
        return mpirep.join()
    except mpirep.MpirepError as error:
        raise to_tf_error(error) from None
