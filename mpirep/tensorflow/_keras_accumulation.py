"""Keras 3's own gradient accumulation (``gradient_accumulation_steps=N``), reduced once per N
micro-steps.

Keras adds each micro-step's gradients to its accumulators and, on every N-th, applies
(gradients + accumulators) / N and zeroes them. The wrappers reduce just before Keras applies,
so reducing what each micro-step passes would cost N reductions where one does. Instead:

- DistributedOptimizer, on the N-th micro-step, reduces gradients + accumulators (this rank's
  sum of the N) and zeroes the accumulators first, so that Keras applies the reduced sum / N,
  the same on every rank; on the other micro-steps the gradients stay local.
- ZeroRedundancyOptimizer builds Keras on its pieces, so Keras's accumulators hold pieces, not
  a rank's whole gradients: it sums them in accumulators of its own and reduce-scatters the
  sums on the N-th micro-step, leaving Keras's at zero.

The N-th micro-step is Keras's own: the one after which its micro-step counter
(``_iterations``) is a multiple of N. This reads Keras's private state, which
``check_supported`` names: a Keras that lacks it raises rather than reduce wrongly.
"""

import tensorflow as tf

import mpirep

_PRIVATE = ("_iterations", "_get_variable_index", "_backend_apply_gradients")


def steps(optimizer):
    """Keras 3's ``gradient_accumulation_steps`` of ``optimizer``, or None (also on Keras 2 and
    tf_keras, which have none)."""
    return getattr(optimizer, "gradient_accumulation_steps", None) or None


def check_supported(optimizer, backward_passes_per_step):
    """Raises where mpirep cannot take over ``optimizer``'s accumulation."""
    if not steps(optimizer):
        return
    rank = f"rank {mpirep.rank()}: " if mpirep.is_initialized() else ""
    if backward_passes_per_step > 1:
        raise ValueError(
            f"{rank}the optimizer accumulates gradients already (Keras's "
            f"gradient_accumulation_steps={steps(optimizer)}); pass backward_passes_per_step=1, "
            "or drop gradient_accumulation_steps and keep backward_passes_per_step")
    missing = [name for name in _PRIVATE if not hasattr(optimizer, name)]
    if missing:
        import keras

        raise NotImplementedError(
            f"{rank}mpirep reduces Keras's gradient accumulation once per "
            f"gradient_accumulation_steps through Keras's private {', '.join(missing)}, which "
            f"Keras {keras.__version__} lacks; use backward_passes_per_step instead")


def is_update_step(optimizer):
    """Whether this micro-step is one on which Keras applies the accumulated gradients."""
    n = steps(optimizer)
    return tf.equal((tf.convert_to_tensor(optimizer._iterations) + 1) % n, 0)


def _accumulators(optimizer, variables):
    accumulators = getattr(optimizer, "_accumulated_gradients", None)
    if accumulators is None:
        raise NotImplementedError(
            f"rank {mpirep.rank()}: the built optimizer has no _accumulated_gradients, where "
            "Keras keeps what gradient_accumulation_steps accumulates; use "
            "backward_passes_per_step instead")
    return [accumulators[optimizer._get_variable_index(v)] for v in variables]


def reduce_on_update_step(optimizer, grads, variables, reduce):
    """``grads`` for Keras's apply: local on the micro-steps that only accumulate; on the N-th,
    ``reduce``(gradients + Keras's accumulators), with the accumulators zeroed."""
    accumulators = _accumulators(optimizer, variables)
    present = [i for i, g in enumerate(grads) if g is not None]
    if not present:
        return list(grads)

    def reduced():
        totals = [None] * len(grads)
        for i in present:
            totals[i] = tf.convert_to_tensor(grads[i]) + tf.convert_to_tensor(accumulators[i])
        outputs = [tf.convert_to_tensor(g) for g in reduce(totals) if g is not None]
        with tf.control_dependencies(outputs):
            cleared = [_zeroed(accumulators[i]) for i in present]
        with tf.control_dependencies(cleared):
            return [tf.identity(o) for o in outputs]

    def local():
        return [tf.convert_to_tensor(grads[i]) for i in present]

    outputs = tf.cond(is_update_step(optimizer), reduced, local)
    merged = list(grads)
    for i, output in zip(present, outputs):
        merged[i] = output
    return merged


def _zeroed(variable):
    """Zeroes ``variable``; returns a read of it, which the graph orders after the assignment
    (a Keras variable's assign returns the value, not the assignment)."""
    variable.assign(tf.zeros(variable.shape, variable.dtype))
    return tf.convert_to_tensor(variable)
