"""Helpers built on the ops: broadcasting variables and Python objects, gathering objects."""

import io
import pickle

import numpy as np
import tensorflow as tf

import mpirep
from mpirep.tensorflow import mpi_ops
from mpirep.tensorflow._naming import tensor_name
from mpirep.tensorflow.process_sets import check as _check_process_set
from mpirep.tensorflow.process_sets import global_process_set


@tf.autograph.experimental.do_not_convert
def broadcast_variables(variables, root_rank, process_set=global_process_set, inplace=True):
    """Assigns ``root_rank``'s value to each variable on every rank, all in one group so the
    core fuses them. Eagerly this runs at once; in a graph it returns the op."""
    variables = list(variables)
    if not tf.executing_eagerly():
        return _assign_broadcast(variables, root_rank, process_set)
    if variables:
        def assign():
            _assign_broadcast(variables, root_rank, process_set)

        tf.function(assign, autograph=False)()
    return None


def _assign_broadcast(variables, root_rank, process_set):
    bridge = mpi_ops._prepare(process_set)
    base = tensor_name("broadcast_variables")
    names = [f"{base}.{i}" for i in range(len(variables))]
    values = bridge.run_group("broadcast", [tf.convert_to_tensor(v) for v in variables], names,
                              root_rank=root_rank)
    return tf.group(*[v.assign(x) for v, x in zip(variables, values)])


def broadcast_global_variables(root_rank):
    """The op that broadcasts every global variable of a TF1-style graph; in eager mode use
    broadcast_variables instead."""
    if tf.executing_eagerly():
        raise RuntimeError("broadcast_global_variables works in graph mode only; eagerly, use "
                           "broadcast_variables(model.variables, root_rank)")
    return broadcast_variables(tf.compat.v1.global_variables(), root_rank)


def _serialize(obj):
    buffer = io.BytesIO()
    pickle.dump(obj, buffer)
    return np.frombuffer(buffer.getvalue(), dtype=np.uint8)


def broadcast_object(obj, root_rank=0, session=None, name=None, process_set=global_process_set):
    """Returns ``root_rank``'s ``obj`` (anything picklable) on every rank."""
    _check_process_set(process_set)
    name = name or "broadcast_object"
    payload = _serialize(obj) if mpirep.rank() == root_rank else np.zeros(0, np.uint8)
    length = mpirep.broadcast(np.array([payload.size], np.int64), root_rank, name=f"{name}.len")
    if mpirep.rank() != root_rank:
        payload = np.zeros(int(length[0]), np.uint8)
    data = mpirep.broadcast(payload, root_rank, name=f"{name}.data")
    return obj if mpirep.rank() == root_rank else pickle.loads(data.tobytes())


def allgather_object(obj, session=None, name=None, process_set=global_process_set):
    """Returns the list of every rank's ``obj`` (anything picklable), in rank order."""
    _check_process_set(process_set)
    name = name or "allgather_object"
    payload = _serialize(obj)
    lengths = mpirep.allgather(np.array([payload.size], np.int64), name=f"{name}.len")
    data = mpirep.allgather(payload, name=f"{name}.data")
    bounds = np.concatenate([[0], np.cumsum(lengths)])
    return [pickle.loads(data[bounds[i]:bounds[i + 1]].tobytes()) for i in range(len(lengths))]
