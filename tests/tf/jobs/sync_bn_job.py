"""SyncBatchNormalization under Keras 3, or tf_keras when TF_USE_LEGACY_KERAS=1: its batch
statistics, moving statistics and gradients are those of the global batch (every rank's batch
concatenated, here of different sizes), and a model with it trains to identical weights. Run
under mpirun at any number of ranks."""

import os
import tempfile

import numpy as np
import tensorflow as tf

import mpirep.tensorflow.keras as hvd
from harness import check, run, same_on_every_rank

hvd.init()
R, N = hvd.rank(), hvd.size()
keras = tf.keras
LEGACY = os.environ.get("TF_USE_LEGACY_KERAS") == "1"
EPS = 1e-3


def batch(r, shape):
    """Rank r's batch: r + 2 rows of ``shape``, with a rank-dependent offset and spread."""
    rng = np.random.default_rng(100 + r)
    return (rng.normal(size=(r + 2,) + shape) * (r + 1) + 5.0 * r).astype(np.float32)


def call(mode, fn, *args):
    return fn(*args) if mode == "eager" else tf.function(fn)(*args)


@check
def batch_and_moving_statistics_are_global():
    for shape in ((3,), (2, 2, 4)):  # dense features, and NHWC images
        everyone = np.concatenate([batch(r, shape) for r in range(N)]).astype(np.float64)
        axes = tuple(range(everyone.ndim - 1))
        mean, var = everyone.mean(axes), everyone.var(axes)
        for mode in ("eager", "function"):
            layer = hvd.SyncBatchNormalization(momentum=0.5, epsilon=EPS)
            out = call(mode, lambda x: layer(x, training=True), tf.constant(batch(R, shape)))
            np.testing.assert_allclose(out.numpy(), (batch(R, shape) - mean) / np.sqrt(var + EPS),
                                       rtol=1e-4, atol=1e-5)
            np.testing.assert_allclose(layer.moving_mean.numpy(), 0.5 * mean, rtol=1e-5)
            np.testing.assert_allclose(layer.moving_variance.numpy(), 0.5 + 0.5 * var, rtol=1e-5)
            same_on_every_rank(hvd, layer.moving_variance.numpy())
            inference = layer(tf.constant(batch(R, shape)), training=False)
            np.testing.assert_allclose(
                inference.numpy(), (batch(R, shape) - 0.5 * mean) / np.sqrt(0.5 + 0.5 * var + EPS),
                rtol=1e-4, atol=1e-5)


@check
def gradients_are_those_of_the_global_batch():
    # Reference: plain batch normalization of the whole batch in one process, loss
    # sum(out * weight) with each rank's rows weighted by r + 1.
    shape = (3,)
    everyone = tf.constant(np.concatenate([batch(r, shape) for r in range(N)]))
    weight = np.concatenate([np.full((r + 2,) + shape, r + 1.0, np.float32) for r in range(N)])
    reference = keras.layers.BatchNormalization(epsilon=EPS)
    with tf.GradientTape() as tape:
        tape.watch(everyone)
        loss = tf.reduce_sum(reference(everyone, training=True) * weight)
    want_x, want_gamma = tape.gradient(loss, [everyone, reference.gamma])
    start = sum(r + 2 for r in range(R))
    for mode in ("eager", "function"):
        layer = hvd.SyncBatchNormalization(epsilon=EPS)
        layer.build((None,) + shape)

        def fn(x):
            with tf.GradientTape() as tape:
                tape.watch(x)
                loss = tf.reduce_sum(layer(x, training=True) * (R + 1.0))
            return tape.gradient(loss, [x, layer.gamma])

        got_x, got_gamma = call(mode, fn, tf.constant(batch(R, shape)))
        np.testing.assert_allclose(got_x.numpy(), want_x.numpy()[start:start + R + 2],
                                   rtol=1e-3, atol=1e-5)
        # gamma's gradient is a sum over rows; summed over ranks it is the global one.
        np.testing.assert_allclose(hvd.allreduce(got_gamma, op=hvd.Sum), want_gamma.numpy(),
                                   rtol=1e-4, atol=1e-5)


@check
def model_trains_to_identical_weights():
    rng = np.random.default_rng(5)
    x = rng.normal(size=(128, 6)).astype(np.float32) * 3 + 2
    y = (np.tanh(x @ rng.normal(size=(6, 1))) > 0).astype(np.float32)
    x, y = x[R::N], y[R::N]
    keras.utils.set_random_seed(10 + R)  # different starting weights on every rank
    model = keras.Sequential([keras.Input((6,)), keras.layers.Dense(16),
                              hvd.SyncBatchNormalization(), keras.layers.Activation("relu"),
                              keras.layers.Dense(1, activation="sigmoid")])
    model.compile(optimizer=hvd.DistributedOptimizer(keras.optimizers.Adam(0.02)),
                  loss="binary_crossentropy")
    history = model.fit(x, y, batch_size=8, epochs=4, verbose=0,
                        callbacks=[hvd.callbacks.BroadcastGlobalVariablesCallback(0)])
    losses = history.history["loss"]
    assert losses[-1] < 0.7 * losses[0], losses
    # The moving statistics are computed from the global batch, so they agree too.
    same_on_every_rank(hvd, np.concatenate([np.ravel(w) for w in model.get_weights()]))
    # The layer is registered with Keras, so a saved model loads without custom_objects.
    path = os.path.join(tempfile.mkdtemp(), "model.h5" if LEGACY else "model.keras")
    model.save(path)
    loaded = keras.models.load_model(path)
    assert type(loaded.layers[1]).__name__ == "SyncBatchNormalization"
    np.testing.assert_allclose(loaded.predict(x, verbose=0), model.predict(x, verbose=0),
                               rtol=1e-6)


run(hvd)
