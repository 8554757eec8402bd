"""Horovod's rank_op, size_op and friends: the job's shape as int32 scalar tensors, read when
the op runs (so a graph built in one place answers for the process that runs it)."""

import numpy as np
import tensorflow as tf

import mpirep
from mpirep import session


def _query_op(query, name):
    if tf.executing_eagerly():
        return tf.constant(query(), tf.int32)
    value = tf.numpy_function(lambda: np.int32(query()), [], tf.int32, stateful=True,
                              name=name)
    value.set_shape([])
    return value


def _set_ranks(process_set_id):
    session._require_init()
    return mpirep.process_set_ranks(process_set_id)


def rank_op(name=None):
    return _query_op(session.rank, name or "mpirep_rank")


def local_rank_op(name=None):
    return _query_op(session.local_rank, name or "mpirep_local_rank")


def local_size_op(name=None):
    return _query_op(session.local_size, name or "mpirep_local_size")


def size_op(process_set_id=0, name=None):
    """The number of ranks of the job, or of the process set with that id."""
    return _query_op(lambda: len(_set_ranks(process_set_id)), name or "mpirep_size")


def process_set_included_op(process_set_id=0, name=None):
    """1 if this rank belongs to the process set with that id, else 0; an unknown id raises."""
    return _query_op(lambda: int(session.rank() in _set_ranks(process_set_id)),
                     name or "mpirep_process_set_included")
