"""The two collectives of a ZeroRedundancyOptimizer step, per exchange of the plan
(_zero_plan.py): a reducescatter that leaves each rank the reduced gradients of the pieces it
owns, and an allgather that brings every rank the parameters the others updated.

Each is an ordinary asynchronous collective of the bridge, so in a graph it starts as soon as
its input exists: an exchange's reducescatter once backprop has produced its gradients, its
allgather once the update has written its pieces. The core fuses allreduces only; the flat
buffer of each exchange is the fusion here."""

import tensorflow as tf

from mpirep.tensorflow import mpi_ops


def _flat(tensor, dtype):
    return tf.cast(tf.reshape(tensor, [-1]), dtype)


def reduce_scatter(plan, grads, variables, op, compression, prescale, postscale, process_set):
    """The reduced gradient of each piece of ``plan.owned``, in that order: shaped like its
    variable for a whole variable, flat for a slice, and None where the gradient is None on
    this rank (as it is on every rank for a variable the loss does not reach)."""
    reduced = {}
    for exchange in plan.exchanges:
        if exchange.block == 0:
            continue
        dtype = tf.as_dtype(exchange.dtype)
        parts = []
        for part in exchange.buffer_parts(padded=True):
            if isinstance(part, int):
                parts.append(tf.zeros([part], dtype))
            elif grads[part.index] is None:
                parts.append(tf.zeros([part.size], dtype))
            else:
                flat = _flat(tf.convert_to_tensor(grads[part.index]), dtype)
                parts.append(flat if plan.is_whole(part) else flat[part.start:part.stop])
        mine = mpi_ops.reducescatter(
            tf.concat(parts, 0), op=op, compression=compression, prescale_factor=prescale,
            postscale_factor=postscale, process_set=process_set, name=f"{exchange.name}.grads")
        offset = 0
        for piece in exchange.segments[plan.rank]:
            grad = grads[piece.index]
            if grad is not None:
                part = mine[offset:offset + piece.size]
                if plan.is_whole(piece):
                    part = tf.reshape(part, variables[piece.index].shape)
                reduced[piece] = tf.cast(part, grad.dtype)
            offset += piece.size
    return [reduced.get(piece) for piece in plan.owned]


def gather_parameters(plan, variables, targets, process_set):
    """Allgathers every rank's updated pieces (``targets``: the variable holding each piece of
    ``plan.owned``) and assigns to this rank's copy of every variable it does not own whole;
    returns the assignments."""
    assignments = []
    holders = dict(zip(plan.owned, targets))
    for exchange in plan.exchanges:
        if exchange.block == 0:
            continue
        own = exchange.segments[plan.rank]
        mine = [_flat(holders[piece], exchange.dtype) for piece in own]
        everyone = mpi_ops.allgather(tf.concat(mine, 0) if mine else tf.zeros([0], exchange.dtype),
                                     process_set=process_set, name=f"{exchange.name}.params")
        mine_whole = {piece.index for piece in own if plan.is_whole(piece)}
        for index, offset in exchange.variable_ranges():
            if index not in mine_whole:
                variable = variables[index]
                value = everyone[offset:offset + plan.sizes[index]]
                assignments.append(variable.assign(tf.reshape(value, variable.shape)))
    return assignments
