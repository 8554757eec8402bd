"""Collectives in TensorFlow through the op library's asynchronous MpirepCollective kernel."""

import ctypes

import tensorflow as tf

from mpirep._core_loader import core
from mpirep.tensorflow import _graph_order, _op_library
from mpirep.tensorflow._errors import without_eager_wrapping

#: Kernels are asynchronous: a collective waiting for other ranks holds no thread.
holds_a_thread_while_waiting = False

_ops = None


def load():
    """Builds (if needed) and loads the op library and hands it the core's function table."""
    global _ops
    if _ops is None:
        path = str(_op_library.library_path())
        module = tf.load_op_library(path)
        library = ctypes.CDLL(path)
        mismatch = library.mpirep_tf_set_api(ctypes.c_void_p(core().api_table_address()))
        if mismatch:
            raise RuntimeError(f"the op library was built for C API version "
                               f"{library.mpirep_tf_api_version()}, the core has {mismatch}")
        _ops = module
    return _ops


def run(collective, tensor, name, reduce_op=0, root_rank=0, prescale=1.0, postscale=1.0,
        splits=None, process_set=0, group_size=0, group=""):
    """One collective; returns (output, received_splits). ``group_size``: the number of tensors
    of its group named ``group``, which every rank must agree on (0: not in a group)."""
    eager = tf.executing_eagerly()
    if eager:
        # TensorFlow's fast path for eager ops takes only EagerTensors as inputs; anything
        # else sends the call through a slower fallback.
        name = tf.constant(name)
        group = tf.constant(group)
        splits = _no_splits() if splits is None else tf.cast(splits, tf.int64)
    else:
        splits = tf.zeros([0], tf.int64) if splits is None else tf.cast(splits, tf.int64)
    try:
        output, received = _ops.mpirep_collective(
            tensor, name, splits, group, collective=core().COLLECTIVES[collective],
            reduce_op=reduce_op, root_rank=root_rank, prescale=prescale, postscale=postscale,
            process_set=process_set, group_size=group_size)
    except tf.errors.OpError as error:
        if not tf.executing_eagerly():
            raise
        raise without_eager_wrapping(error) from None
    if not eager:
        _graph_order.run_independently(output.op)
    return output, received


_empty_splits = None


def _no_splits():
    global _empty_splits
    if _empty_splits is None:
        with tf.init_scope():
            _empty_splits = tf.zeros([0], tf.int64)
    return _empty_splits


def run_group(collective, tensors, names, **kwargs):
    """Several collectives of one kind, submitted together, as Horovod's groups are: in a
    graph none starts before every input exists, so they reach the core at once and fuse."""
    def submit():
        return [run(collective, t, n, group_size=len(tensors), group=names[0], **kwargs)[0]
                for t, n in zip(tensors, names)]

    if len(tensors) < 2 or tf.executing_eagerly():
        return submit()
    with tf.control_dependencies(tensors):
        return submit()
