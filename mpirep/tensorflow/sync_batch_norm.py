"""SyncBatchNormalization: Keras batch normalization whose batch statistics are those of the
global batch, the concatenation of every rank's batch.

Each rank reduces its batch to per-channel (count, mean, sum of squared deviations) and the
ranks allgather these; every rank then combines them (Chan et al.'s pairwise formula) into the
global mean and variance. Gathering the three moments instead of summing x and x**2 keeps the
variance accurate when the mean is large. The gradient flows back through an allgather whose
gradient sums over ranks, so each rank's inputs receive the gradient of the sum of all ranks'
losses, as in single-process training on the global batch.
"""

import tensorflow as tf

from mpirep import session
from mpirep.tensorflow import mpi_ops
from mpirep.tensorflow.process_sets import global_process_set


def global_moments(x, axes, keepdims=False, weights=None, process_set=global_process_set):
    """Mean and (biased) variance of ``x`` over ``axes`` and over every rank's ``x``, as
    tf.nn.moments would give on the concatenated batch. ``weights`` (broadcastable to ``x``)
    weigh the elements, e.g. a mask; half-precision inputs are computed in float32."""
    x = tf.convert_to_tensor(x)
    y = tf.cast(x, tf.float32) if x.dtype in (tf.float16, tf.bfloat16) else x
    axes = sorted(a % y.shape.rank for a in axes)
    w = tf.ones_like(y) if weights is None else tf.broadcast_to(tf.cast(weights, y.dtype),
                                                                  tf.shape(y))
    count = tf.reduce_sum(w, axes, keepdims=True)
    mean = tf.math.divide_no_nan(tf.reduce_sum(w * y, axes, keepdims=True), count)
    m2 = tf.reduce_sum(w * tf.square(y - mean), axes, keepdims=True)
    gathered = mpi_ops.allgather_with_summed_gradient(
        tf.stack([count, mean, m2])[tf.newaxis], name="sync_batch_norm", process_set=process_set)
    counts, means, m2s = gathered[:, 0], gathered[:, 1], gathered[:, 2]
    total = tf.reduce_sum(counts, 0)
    global_mean = tf.math.divide_no_nan(tf.reduce_sum(counts * means, 0), total)
    spread = tf.reduce_sum(m2s, 0) + tf.reduce_sum(counts * tf.square(means - global_mean), 0)
    variance = tf.math.divide_no_nan(spread, total)
    if not keepdims:
        global_mean, variance = tf.squeeze(global_mean, axes), tf.squeeze(variance, axes)
    return tf.cast(global_mean, x.dtype), tf.cast(variance, x.dtype)


def _keras3_class(base):
    class SyncBatchNormalization(base):
        """Batch normalization over the global batch (every rank's batch together) while
        training; at inference it uses the moving statistics, which are the same on every
        rank. Takes BatchNormalization's arguments."""

        def __init__(self, fused=False, **kwargs):
            if fused:
                raise ValueError("SyncBatchNormalization does not support fused=True")
            super().__init__(**kwargs)

        def _moments(self, inputs, mask):
            if session.size() == 1:
                return super()._moments(inputs, mask)
            weights = None
            if mask is not None:
                weights = tf.cast(tf.expand_dims(mask, -1), inputs.dtype)
            return global_moments(inputs, self._reduction_axes, keepdims=False, weights=weights)

    return SyncBatchNormalization


def _tf_keras_class(base):
    class SyncBatchNormalization(base):
        """Batch normalization over the global batch (every rank's batch together) while
        training; at inference it uses the moving statistics, which are the same on every
        rank. Takes BatchNormalization's arguments."""

        def __init__(self, fused=False, **kwargs):
            if fused in (True, None):
                raise ValueError("SyncBatchNormalization does not support fused=True")
            super().__init__(fused=False, **kwargs)

        def _calculate_mean_and_var(self, inputs, reduction_axes, keep_dims, mask=None):
            if session.size() == 1:
                return super()._calculate_mean_and_var(inputs, reduction_axes, keep_dims,
                                                       mask=mask)
            weights = None
            if mask is not None:
                weights = tf.expand_dims(tf.cast(mask, inputs.dtype), -1)
            return global_moments(inputs, reduction_axes, keepdims=keep_dims, weights=weights)

    return SyncBatchNormalization


_class = None


def sync_batch_normalization_class():
    """The layer class for the Keras that ``tf.keras`` is (Keras 3, or tf_keras under
    TF_USE_LEGACY_KERAS=1), made on first use and registered for loading saved models."""
    global _class
    if _class is None:
        base = tf.keras.layers.BatchNormalization
        legacy = not hasattr(base, "_moments") or hasattr(base, "_calculate_mean_and_var")
        cls = (_tf_keras_class if legacy else _keras3_class)(base)
        cls.__module__ = __name__
        register = tf.keras.utils.register_keras_serializable(package="mpirep")
        _class = register(cls)
    return _class
