"""Local gradient accumulation for backward_passes_per_step, as Horovod does it: every backward
pass adds its gradients to local sums, every N-th pass reduces the sums across ranks, and only
those passes apply them. The optimizer's step counter advances on every pass."""

import tensorflow as tf


class GradientAccumulator:
    """``counter`` (Horovod's name) holds the passes since the last reduction."""

    def __init__(self, steps, average):
        self.steps = steps
        self.average = average
        self.counter = None
        self._sums = None

    def _build(self, grads, variables):
        with tf.init_scope():
            self.counter = tf.Variable(0, dtype=tf.int32, trainable=False,
                                       name="mpirep_accumulated_steps")
            self._sums = [None if g is None else
                          tf.Variable(tf.zeros(v.shape, g.dtype), trainable=False,
                                      name="mpirep_accumulated_gradient")
                          for g, v in zip(grads, variables)]

    def _add(self, grads, variables):
        """Adds ``grads`` to the sums; returns the indices of those not None and the passes
        counted since the last reduction, this one included."""
        if self._sums is None:
            self._build(grads, variables)
        present = [i for i, g in enumerate(grads) if g is not None]
        added = [self._sums[i].assign_add(tf.convert_to_tensor(grads[i])) for i in present]
        with tf.control_dependencies(added):
            return present, self.counter.assign_add(1)

    def _summed(self):
        scale = 1.0 / self.steps if self.average else 1.0
        return [None if t is None else t.read_value() * tf.cast(scale, t.dtype)
                for t in self._sums]

    def _clear(self, present):
        return [self._sums[i].assign(tf.zeros_like(self._sums[i])) for i in present] + \
            [self.counter.assign(0)]

    def accumulate_and_reduce(self, grads, variables, reduce):
        """Adds ``grads`` to the sums. On every N-th call returns ``reduce(sums)`` (the sums
        divided by N when averaging) and clears the sums; on the other calls returns the
        gradients as they are, which ``apply_when_reduced`` then does not apply."""
        present, count = self._add(grads, variables)

        def reduced():
            outputs = reduce(self._summed())
            outputs = [tf.convert_to_tensor(outputs[i]) for i in present]
            with tf.control_dependencies(outputs):
                cleared = self._clear(present)
            with tf.control_dependencies(cleared):
                return [tf.identity(o) for o in outputs]

        def local():
            return [tf.convert_to_tensor(grads[i]) for i in present]

        outputs = tf.cond(count >= self.steps, reduced, local) if present else []
        merged = [None] * len(grads)
        for i, output in zip(present, outputs):
            merged[i] = output
        return merged

    def reduce_and_apply_every_nth(self, grads, variables, reduce_and_apply, count_skipped_step,
                                   due=None):
        """Adds ``grads`` to the sums. Every N-th call (or where the boolean tensor ``due`` is
        true) runs ``reduce_and_apply(sums)`` (the sums divided by N when averaging) and
        clears the sums; the other calls run ``count_skipped_step()``."""
        present, count = self._add(grads, variables)
        if due is None:
            due = count >= self.steps

        def full():
            with tf.control_dependencies([_done(reduce_and_apply(self._summed()))]):
                return _done(self._clear(present))

        def skipped():
            return _done(count_skipped_step())

        return tf.cond(due, full, skipped)

    def apply_when_reduced(self, apply, count_skipped_step, after):
        """Runs ``apply()`` if the last accumulate_and_reduce reduced, else
        ``count_skipped_step()``; ordered after the tensors ``after``."""
        def applied():
            return _done(apply())

        def skipped():
            return _done(count_skipped_step())

        with tf.control_dependencies([t for t in after if t is not None]):
            return tf.cond(tf.equal(self.counter, 0), applied, skipped)


def _done(result):
    """True, once whatever ``result`` holds has run (a graph would otherwise prune it). An
    assignment to a variable may come back as the variable; its ``op`` is the assignment."""
    ops = []
    for item in tf.nest.flatten(result):
        if not isinstance(item, (tf.Tensor, tf.Operation)):
            item = getattr(item, "op", None)
        if isinstance(item, (tf.Tensor, tf.Operation)):
            ops.append(item)
    with tf.control_dependencies(ops):
        return tf.constant(True)
