"""Checkpoints of a ZeroRedundancyOptimizer that look like a plain optimizer's.

A plain optimizer saves its variables by position (Keras 3's ``save_own_variables``): first
those it makes for itself (the step counter, ...), then the slots in the order its ``build``
creates them. That order is found by building a stand-in of the same class and config, in
plain mode, on stand-in variables of one element each: every variable is then named by a key,
("slot", variable index, slot name) or ("own", position among the non-slot variables), which is
the same on every rank and at every rank count. A slot of a rank's slice of a variable
(_zero_plan.py) holds that slice of the variable's slot. Saving writes the gathered full state
in the plain order; loading picks this rank's shard out of it, whatever the count that saved
it.
"""

import numpy as np
import tensorflow as tf

import mpirep
from mpirep.tensorflow._zero_pieces import variable_like
from mpirep.tensorflow.functions import allgather_object


def _variables(optimizer):
    variables = optimizer.variables
    return list(variables() if callable(variables) else variables)


def entries(optimizer):
    """(key, piece, variable) for each of the optimizer's variables: the piece is the part of a
    model variable whose slot it is, None for the others."""
    slot_keys = optimizer._mpirep_zero.slot_keys
    own = 0
    result = []
    for variable in _variables(optimizer):
        if id(variable) in slot_keys:
            name, piece = slot_keys[id(variable)]
            result.append((("slot", piece.index, name), piece, variable))
        else:
            result.append((("own", own), None, variable))
            own += 1
    return result


def keys(optimizer):
    return [key for key, _, _ in entries(optimizer)]


def shard_of(optimizer, piece, value):
    """The part of a plain optimizer's ``value`` that this optimizer holds for ``piece``."""
    if piece is None or optimizer._mpirep_zero.plan.is_whole(piece):
        return value
    return np.ravel(np.asarray(value))[piece.start:piece.stop]


def _stand_in(variable):
    shape = (1,) * len(variable.shape)
    value = np.zeros(shape, tf.as_dtype(variable.dtype).as_numpy_dtype)
    return variable_like(variable, value, "stand_in", False)


def plain_layout(optimizer):
    """The keys of a plain optimizer's variables, in the order it saves them."""
    state = optimizer._mpirep_zero
    stand_in = type(optimizer).from_config(optimizer.get_config())
    stand_in._mpirep_zero.layout_only = True
    with tf.init_scope():
        stand_in.build([_stand_in(v) for v in state.variables])
    return keys(stand_in)


def _iterations(optimizer):
    return int(optimizer.iterations.numpy())


def is_sharded(optimizer):
    """Whether ``optimizer`` is a built ZeroRedundancyOptimizer whose state is divided between
    ranks, so that no rank's own variables are its whole state."""
    state = getattr(optimizer, "_mpirep_zero", None)
    return state is not None and state.plan is not None and not state.plain


def gather(optimizer):
    optimizer._mpirep_zero.gathered = (_iterations(optimizer), full_state(optimizer))


def full_state(optimizer):
    """Collective over the optimizer's process set: the whole state, every rank's shard merged,
    as the values of a plain optimizer's variables in the order it saves them."""
    state = optimizer._mpirep_zero
    mine = [(key, piece, np.asarray(v.numpy())) for key, piece, v in entries(optimizer)]
    merged = {}
    for shard in allgather_object(mine, name="zero.gather_state",
                                  process_set=state.process_set):
        for key, piece, value in shard:
            if piece is None:
                merged.setdefault(key, value)
            elif state.plan.is_whole(piece):
                merged[key] = value
            else:
                shape = tuple(state.variables[piece.index].shape)
                whole = merged.setdefault(key, np.zeros(shape, value.dtype))
                whole.reshape(-1)[piece.start:piece.stop] = value
    layout = plain_layout(optimizer)
    missing = [key for key in layout if key not in merged]
    if missing:
        raise RuntimeError(f"rank {mpirep.rank()}: no rank holds optimizer state {missing[:3]}")
    return [merged[key] for key in layout]


def save(optimizer, store):
    state = optimizer._mpirep_zero
    if state.gathered is None or state.gathered[0] != _iterations(optimizer):
        raise RuntimeError(
            f"rank {mpirep.rank()}: this ZeroRedundancyOptimizer holds 1/{state.plan.size} of "
            "the optimizer state; call optimizer.gather_state() on every rank of its process "
            "set after the last step and before saving")
    for position, value in enumerate(state.gathered[1]):
        store[str(position)] = value
    state.gathered = None


def load(optimizer, store):
    """Takes this rank's shard from ``store``: a plain optimizer's variables by position, keyed
    "0", "1", ..."""
    layout = plain_layout(optimizer)
    if len(store.keys()) != len(layout):
        raise ValueError(
            f"rank {mpirep.rank()}: the checkpoint holds {len(store.keys())} optimizer "
            f"variables, but a plain {type(optimizer).__name__} with this model has "
            f"{len(layout)}")
    position = {key: p for p, key in enumerate(layout)}
    for key, piece, variable in entries(optimizer):
        variable.assign(shard_of(optimizer, piece, store[str(position[key])]))
