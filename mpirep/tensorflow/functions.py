"""Helpers built on the ops: broadcasting variables and Python objects, gathering objects."""

import io
import pickle

import numpy as np
import tensorflow as tf

import mpirep
from mpirep import collectives
from mpirep.tensorflow import mpi_ops
from mpirep.tensorflow._errors import to_tf_error
from mpirep.tensorflow._naming import tensor_name
from mpirep.tensorflow.process_sets import global_process_set, resolve, set_root


@tf.autograph.experimental.do_not_convert
def broadcast_variables(variables, root_rank, process_set=global_process_set, inplace=True):
    """Assigns global rank ``root_rank``'s value to each variable on every rank of the set, all
    in one group so the core fuses them. Eagerly this runs at once; in a graph it returns the
    op. ``inplace`` is accepted for Horovod's sake; either way the values arrive in a new buffer
    and are assigned."""
    variables = list(variables)
    if not tf.executing_eagerly():
        return tf.group(*(_assign_broadcast(variables, root_rank, process_set)
                          if variables else []))
    if variables:
        _eager_broadcast(variables, root_rank, process_set)
    return None


@tf.autograph.experimental.do_not_convert
def broadcast_(variables, root_rank, name=None, process_set=global_process_set):
    """Horovod's in-place broadcast: assigns global rank ``root_rank``'s value to each variable
    (resource or reference variables, the latter in graphs) and returns their new values."""
    variables = list(variables)
    if tf.executing_eagerly():
        _eager_broadcast(variables, root_rank, process_set, name)
        return [_read(v) for v in variables]
    with tf.control_dependencies(_assign_broadcast(variables, root_rank, process_set, name)):
        return [tf.identity(_read(v)) for v in variables]


def _read(variable):
    """A fresh read of ``variable``: read_value() where there is one (a reference variable's
    cached snapshot would not wait for an assignment); Keras 3's variables convert instead."""
    read_value = getattr(variable, "read_value", None)
    return read_value() if read_value is not None else tf.convert_to_tensor(variable)


def _eager_broadcast(variables, root_rank, process_set, name=None):
    # Straight through the numpy API: every broadcast is submitted before any is awaited, and
    # no tf.function is traced for a call that typically happens once.
    set_id, _, _ = resolve(process_set)
    root = set_root(set_id, root_rank)
    base = tensor_name("broadcast_variables", name, set_id=set_id)
    try:
        handles = [collectives.submit("broadcast", np.asarray(v.numpy()), f"{base}.{i}",
                                      root_rank=root, process_set=set_id)
                   for i, v in enumerate(variables)]
        values = [mpirep.synchronize(h) for h in handles]
    except mpirep.MpirepError as error:
        raise to_tf_error(error) from None
    for variable, value in zip(variables, values):
        variable.assign(value)


def _assign_broadcast(variables, root_rank, process_set, name=None):
    """The ops that assign the broadcast values to ``variables`` in a graph."""
    target = mpi_ops._prepare(process_set)
    base = tensor_name("broadcast_variables", name, set_id=target.set_id)
    names = [f"{base}.{i}" for i in range(len(variables))]
    values = target.run_group("broadcast", [_read(v) for v in variables], names,
                              root_rank=target.root(root_rank))
    return [v.assign(x) for v, x in zip(variables, values)]


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
    """Returns global rank ``root_rank``'s ``obj`` (anything picklable) on every rank of the
    set."""
    set_id, _, _ = resolve(process_set)
    root = set_root(set_id, root_rank)
    is_root = mpirep.rank() == root_rank
    name = name or "broadcast_object"
    payload = _serialize(obj) if is_root else np.zeros(0, np.uint8)
    length = mpirep.broadcast(np.array([payload.size], np.int64), root, name=f"{name}.len",
                              process_set=set_id)
    if not is_root:
        payload = np.zeros(int(length[0]), np.uint8)
    data = mpirep.broadcast(payload, root, name=f"{name}.data", process_set=set_id)
    return obj if is_root else pickle.loads(data.tobytes())


def broadcast_object_fn(root_rank=0, session=None, name=None, process_set=global_process_set):
    """Horovod's TF1 helper: a function that broadcasts the object it is given, as
    broadcast_object does (mpirep needs no session for it)."""
    return lambda obj: broadcast_object(obj, root_rank, session, name, process_set)


def allgather_object(obj, session=None, name=None, process_set=global_process_set):
    """Returns the list of every rank's ``obj`` (anything picklable), in rank order."""
    set_id, _, _ = resolve(process_set)
    name = name or "allgather_object"
    payload = _serialize(obj)
    lengths = mpirep.allgather(np.array([payload.size], np.int64), name=f"{name}.len",
                               process_set=set_id)
    data = mpirep.allgather(payload, name=f"{name}.data", process_set=set_id)
    bounds = np.concatenate([[0], np.cumsum(lengths)])
    return [pickle.loads(data[bounds[i]:bounds[i + 1]].tobytes()) for i in range(len(lengths))]
