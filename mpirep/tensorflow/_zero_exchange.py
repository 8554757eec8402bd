"""The two collectives of a ZeroRedundancyOptimizer step, per exchange of the plan
(_zero_plan.py): a reducescatter that leaves each rank the reduced gradients of the variables
it owns, and an allgather that brings every rank the parameters the others updated.

Each is an ordinary asynchronous collective of the bridge, so in a graph it starts as soon as
its input exists. The core fuses allreduces only; the flat buffer of each exchange is the
fusion here."""

import tensorflow as tf

from mpirep.tensorflow import mpi_ops


def _flat(tensor, dtype):
    return tf.cast(tf.reshape(tensor, [-1]), dtype)


def reduce_scatter(plan, grads, variables, op, compression, prescale, postscale, process_set):
    """Returns a list like ``grads`` whose owned entries hold the reduced gradient (None where
    the gradient is None on every rank, as it is for a variable the loss does not reach) and
    whose other entries are None."""
    reduced = [None] * len(grads)
    for exchange in plan.exchanges:
        if exchange.block == 0:
            continue
        dtype = tf.as_dtype(exchange.dtype)
        pieces = []
        for r, segment in enumerate(exchange.segments):
            for i in segment:
                grad = grads[i]
                if grad is None:
                    pieces.append(tf.zeros([plan.sizes[i]], dtype))
                else:
                    pieces.append(_flat(tf.convert_to_tensor(grad), dtype))
            padding = exchange.block - exchange.length(r, plan.sizes)
            if padding:
                pieces.append(tf.zeros([padding], dtype))
        mine = mpi_ops.reducescatter(
            tf.concat(pieces, 0), op=op, compression=compression, prescale_factor=prescale,
            postscale_factor=postscale, process_set=process_set, name=f"{exchange.name}.grads")
        offset = 0
        for i in exchange.segments[plan.rank]:
            if grads[i] is not None:
                piece = mine[offset:offset + plan.sizes[i]]
                reduced[i] = tf.cast(tf.reshape(piece, variables[i].shape), grads[i].dtype)
            offset += plan.sizes[i]
    return reduced


def gather_parameters(plan, variables, process_set):
    """Allgathers every rank's owned parameters and assigns the others' to this rank's copies;
    returns the assignments."""
    assignments = []
    for exchange in plan.exchanges:
        if exchange.block == 0:
            continue
        dtype = tf.as_dtype(exchange.dtype)
        own = exchange.segments[plan.rank]
        mine = (tf.concat([_flat(variables[i], dtype) for i in own], 0) if own
                else tf.zeros([0], dtype))
        everyone = mpi_ops.allgather(mine, process_set=process_set,
                                     name=f"{exchange.name}.params")
        offset = 0
        for r, segment in enumerate(exchange.segments):
            for i in segment:
                if r != plan.rank:
                    piece = everyone[offset:offset + plan.sizes[i]]
                    assignments.append(variables[i].assign(
                        tf.reshape(piece, variables[i].shape)))
                offset += plan.sizes[i]
    return assignments
