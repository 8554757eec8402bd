"""Collectives in TensorFlow through tf.numpy_function over mpirep's numpy API: needs no
compiler, costs a copy each way and some Python per op.

A group of tensors goes through one numpy_function that submits them all before waiting, so the
core fuses them. A numpy_function blocks its TF thread while it waits (with the GIL released),
so independent collectives in one graph are best issued as a group.
"""

import numpy as np
import tensorflow as tf

from mpirep import collectives
from mpirep._core_loader import core
from mpirep.errors import MpirepError
from mpirep.tensorflow._errors import to_tf_error

#: Each call blocks a TensorFlow thread until its collectives are done, so independent calls
#: in one graph run one after another: callers put what they can into one group.
holds_a_thread_while_waiting = True


def _submit(collective, array, name, reduce_op, root_rank, prescale, postscale, splits,
            process_set, group_size=0, group=""):
    """Submits through the numpy API under ``name``, the core's name (tensor_name) as bytes
    or str; ``reduce_op`` is a code."""
    name = name.decode() if isinstance(name, bytes) else str(name)
    traits = _traits(collective)
    if traits["fuses"]:
        return collectives.group_member_allreduce_async(array, reduce_op, name, prescale,
                                                        postscale, process_set, group_size,
                                                        group)
    if traits["splits"]:
        return collectives.submit_alltoall(array, splits, name, process_set)
    return collectives.submit(collective, array, name, reduce_op, root_rank, prescale, postscale,
                              process_set=process_set)


def _traits(collective):
    """The core's traits of a collective that works on a tensor (common.h, MPIREP_COLLECTIVES)."""
    traits = core().COLLECTIVE_TRAITS.get(collective)
    if traits is None or traits["joins"] or traits["changes_sets"]:
        raise ValueError(f"unknown collective {collective!r}")
    return traits


def run(collective, tensor, name, reduce_op=0, root_rank=0, prescale=1.0, postscale=1.0,
        splits=None, process_set=0):
    """One collective; returns (output, received_splits)."""
    tensor = tf.convert_to_tensor(tensor)
    has_splits = splits is not None
    split_input = tf.cast(splits, tf.int64) if has_splits else tf.zeros([0], tf.int64)

    def compute(array, name_bytes, split_array):
        try:
            handle = _submit(collective, array, name_bytes, reduce_op, root_rank, prescale,
                             postscale, split_array if has_splits else None, process_set)
            result = collectives.synchronize(handle)
        except MpirepError as error:
            raise to_tf_error(error) from None
        if has_splits:
            return result[0], result[1]
        return result, np.zeros([0], np.int64)

    output, received = tf.numpy_function(compute, [tensor, name, split_input],
                                         [tensor.dtype, tf.int64], stateful=True)
    output.set_shape(_output_shape(collective, tensor.shape))
    return output, received


def run_group(collective, tensors, names, reduce_op=0, root_rank=0, prescale=1.0, postscale=1.0,
              process_set=0):
    """Several collectives of one kind in one numpy_function: all submitted, then all awaited."""
    tensors = [tf.convert_to_tensor(t) for t in tensors]
    if not tensors:
        return []

    def compute(*arrays):
        try:
            handles = [_submit(collective, a, n, reduce_op, root_rank, prescale, postscale, None,
                               process_set, len(names), names[0])
                       for a, n in zip(arrays, names)]
            return [collectives.synchronize(h) for h in handles]
        except MpirepError as error:
            raise to_tf_error(error) from None

    outputs = tf.numpy_function(compute, tensors, [t.dtype for t in tensors], stateful=True)
    if not isinstance(outputs, (list, tuple)):  # eagerly, one output comes back bare
        outputs = [outputs]
    for output, tensor in zip(outputs, tensors):
        output.set_shape(_output_shape(collective, tensor.shape))
    return list(outputs)


def _output_shape(collective, shape):
    if shape.rank in (None, 0) or _traits(collective)["same_shape"]:
        return shape
    return tf.TensorShape([None]).concatenate(shape[1:])
