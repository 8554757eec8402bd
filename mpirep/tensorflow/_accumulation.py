"""Local gradient accumulation for backward_passes_per_step: gradients are summed into
variables every step, and reduced across ranks and applied once every N steps."""

import tensorflow as tf


class GradientAccumulator:
    def __init__(self, steps, average):
        self.steps = steps
        self.average = average
        self._sums = None
        self._count = None

    def _build(self, grads, variables):
        with tf.init_scope():
            self._count = tf.Variable(0, dtype=tf.int64, trainable=False,
                                      name="mpirep_accumulated_steps")
            self._sums = [None if g is None else
                          tf.Variable(tf.zeros(v.shape, g.dtype), trainable=False,
                                      name="mpirep_accumulated_gradient")
                          for g, v in zip(grads, variables)]

    def step(self, grads, variables, apply):
        """Adds ``grads`` to the sums; on every N-th step calls ``apply(sums)`` and clears."""
        if self._sums is None:
            self._build(grads, variables)
        for total, grad in zip(self._sums, grads):
            if total is not None and grad is not None:
                total.assign_add(tf.convert_to_tensor(grad))
        count = self._count.assign_add(1)

        def flush():
            scale = 1.0 / self.steps if self.average else 1.0
            summed = [None if t is None else t.read_value() * tf.cast(scale, t.dtype)
                      for t in self._sums]
            apply(summed)
            with tf.control_dependencies([s for s in summed if s is not None]):
                for total in self._sums:
                    if total is not None:
                        total.assign(tf.zeros_like(total))
                self._count.assign(0)
            return tf.constant(True)

        return tf.cond(count >= self.steps, flush, lambda: tf.constant(False))
