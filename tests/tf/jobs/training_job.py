"""Training with mpirep.tensorflow.keras under Keras 3, or tf_keras when TF_USE_LEGACY_KERAS=1:
Model.fit, backward_passes_per_step, a custom tf.function loop, the callbacks, save and load.
Run under mpirun at any number of ranks."""

import os
import sys
import tempfile

import numpy as np
import tensorflow as tf

import mpirep.tensorflow.keras as hvd
from harness import check, expect_error, run, same_on_every_rank
from mpirep._core_loader import core

hvd.init()
R, N = hvd.rank(), hvd.size()
keras = tf.keras
LEGACY = os.environ.get("TF_USE_LEGACY_KERAS") == "1"


def data(samples=256, seed=7):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(samples, 8)).astype(np.float32)
    y = (x @ rng.normal(size=(8, 1)) + 0.1).astype(np.float32)
    return x[R::N], y[R::N]


def model(seed):
    keras.utils.set_random_seed(seed)  # a different start on every rank
    return keras.Sequential([keras.Input((8,)), keras.layers.Dense(16, activation="tanh"),
                             keras.layers.Dense(1)])


def weights(m):
    return np.concatenate([np.ravel(w) for w in m.get_weights()])


@check
def one_step_averages_gradients_exactly():
    # loss = sum(w * x_r) has gradient x_r, so one SGD step with lr 1 gives w0 - mean_r x_r.
    xs = [np.arange(1, 5, dtype=np.float32) * (r + 1) for r in range(N)]
    for op, divisor in ((hvd.Average, N), (hvd.Sum, 1)):
        w = tf.Variable(np.ones(4, np.float32))
        options = dict(op=op) if op == hvd.Sum else dict(gradient_predivide_factor=2.0)
        opt = hvd.DistributedOptimizer(keras.optimizers.SGD(1.0), **options)
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(w * xs[R])
        opt.apply_gradients(zip(tape.gradient(loss, [w]), [w]))
        np.testing.assert_allclose(w.numpy(), 1.0 - sum(xs) / divisor, rtol=1e-6)


@check
def fit_loss_falls_and_weights_identical():
    x, y = data()
    m = model(seed=100 + R)
    m.compile(optimizer=hvd.DistributedOptimizer(keras.optimizers.Adam(0.01)), loss="mse")
    history = m.fit(x, y, batch_size=16, epochs=4, verbose=0,
                    callbacks=[hvd.callbacks.BroadcastGlobalVariablesCallback(0)])
    losses = history.history["loss"]
    assert losses[-1] < 0.5 * losses[0], losses
    same_on_every_rank(hvd, weights(m))


@check
def mixed_precision_skips_a_step_on_every_rank_or_none():
    """Under mixed_float16 the loss-scale optimizer skips a step whose gradients overflowed:
    they overflow on the last rank alone, in the second of four batches, and every rank skips
    that step and halves its loss scale, with DistributedOptimizer and with ZeRO."""
    for wrap in (hvd.DistributedOptimizer, hvd.ZeroRedundancyOptimizer):
        keras.mixed_precision.set_global_policy("mixed_float16")
        try:
            keras.utils.set_random_seed(3)
            m = keras.Sequential([keras.Input((4,)), keras.layers.Dense(4),
                                  keras.layers.Dense(1, dtype="float32")])
            m.compile(optimizer=wrap(keras.optimizers.SGD(0.01)), loss="mse")
            x = np.ones((32, 4), np.float32) * (R + 1) / N
            if R == N - 1:
                x[8:16] = 6e4   # beyond float16's range
            m.fit(x, np.ones((32, 1), np.float32), batch_size=8, epochs=1, shuffle=False,
                  verbose=0)
        finally:
            keras.mixed_precision.set_global_policy("float32")
        optimizer = m.optimizer   # Keras 3's names, then tf_keras's
        final = float(optimizer.dynamic_scale if hasattr(optimizer, "dynamic_scale")
                      else optimizer.loss_scale)
        assert final == float(optimizer.initial_scale) / 2, (wrap, optimizer.initial_scale, final)
        same_on_every_rank(hvd, weights(m))
        same_on_every_rank(hvd, [int(optimizer.iterations.numpy()), final])


@check
def backward_passes_per_step_two():
    x, y = data()
    m = model(seed=200 + R)
    opt = hvd.DistributedOptimizer(keras.optimizers.SGD(0.05), backward_passes_per_step=2,
                                   average_aggregated_gradients=True)
    m.compile(optimizer=opt, loss="mse")
    history = m.fit(x, y, batch_size=16, epochs=3, verbose=0,
                    callbacks=[hvd.callbacks.BroadcastGlobalVariablesCallback(0)])
    assert history.history["loss"][-1] < history.history["loss"][0], history.history
    steps = 3 * len(x) // 16
    # As in Horovod, iterations counts every backward pass, applied or not.
    assert int(opt.iterations.numpy()) == steps, (int(opt.iterations.numpy()), steps)
    same_on_every_rank(hvd, weights(m))


def tensors_submitted():
    """How many tensors this rank has handed the core so far, negotiated or from its cache."""
    stats = core().negotiation_stats()
    return stats["requests_sent"] + stats["cached_tensors"]


@check
def keras_accumulation_reduces_once_per_n_micro_steps():
    """Keras 3's gradient_accumulation_steps=2 under DistributedOptimizer and ZeRO: 4
    micro-steps hand the core as many tensors as 2 steps without accumulation, and train as
    one process does on the union of the ranks' data with the same accumulation. This pins
    the Keras private state that mpirep/tensorflow/_keras_accumulation.py reads."""
    if not hasattr(keras.optimizers.SGD(0.1), "gradient_accumulation_steps"):
        # tf_keras and Keras 2 have no such option: Keras itself refuses it
        expect_error(TypeError, lambda: keras.optimizers.Adam(0.01, gradient_accumulation_steps=2))
        return
    micro, batch = 4, 8
    rng = np.random.default_rng(5)
    x = rng.normal(size=(micro * N * batch, 8)).astype(np.float32)
    y = np.sin(x[:, :1] + 0.5 * x[:, 1:2]).astype(np.float32)
    mine = np.concatenate([np.arange(k * N * batch + R * batch, k * N * batch + (R + 1) * batch)
                           for k in range(micro)])

    def trained(wrap, rows, size, steps, accumulate, broadcast=False):
        m = model(seed=800 + (R if broadcast else 0))
        opt = keras.optimizers.Adam(0.02, gradient_accumulation_steps=accumulate)
        m.compile(optimizer=wrap(opt), loss="mse")
        before = tensors_submitted()
        m.fit(x[rows][:steps * size], y[rows][:steps * size], batch_size=size, epochs=1,
              shuffle=False, verbose=0,
              callbacks=[hvd.callbacks.BroadcastGlobalVariablesCallback(0)] if broadcast else [])
        return weights(m), tensors_submitted() - before

    reference, _ = trained(lambda o: o, np.arange(len(x)), N * batch, micro, 2)
    for wrap in (hvd.DistributedOptimizer, hvd.ZeroRedundancyOptimizer):
        accumulated, tensors = trained(wrap, mine, batch, micro, 2)
        _, plain_tensors = trained(wrap, mine, batch, micro // 2, None)
        assert tensors == plain_tensors > 0, (wrap.__name__, tensors, plain_tensors)
        np.testing.assert_allclose(accumulated, reference, rtol=1e-5, atol=1e-6,
                                   err_msg=wrap.__name__)
        same_on_every_rank(hvd, accumulated)
        # The callback broadcasts again after the first micro-step, when Keras's accumulators
        # hold each rank's own gradients: it must leave them be.
        broadcast, _ = trained(wrap, mine, batch, micro, 2, broadcast=True)
        np.testing.assert_allclose(broadcast, reference, rtol=1e-5, atol=1e-6,
                                   err_msg=f"{wrap.__name__} with the broadcast callback")
        same_on_every_rank(hvd, broadcast)


@check
def custom_loop_with_tape():
    x, y = data()
    m = model(seed=300 + R)
    opt = keras.optimizers.SGD(0.05)
    hvd.broadcast_variables(m.variables, root_rank=0)

    @tf.function
    def step(xb, yb):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean((m(xb, training=True) - yb) ** 2)
        tape = hvd.DistributedGradientTape(tape)
        grads = tape.gradient(loss, m.trainable_variables)
        opt.apply_gradients(zip(grads, m.trainable_variables))
        return loss

    losses = [float(step(x[i:i + 16], y[i:i + 16])) for _ in range(4)
              for i in range(0, len(x) - 15, 16)]
    assert losses[-1] < 0.5 * losses[0], losses[::8]
    same_on_every_rank(hvd, weights(m))


@check
def fit_with_uneven_data_then_join():
    # Rank r has N + 1 - r batches. A linear model under mse with plain SGD, checked against
    # the same steps done in numpy: at step k the gradient is the sum over the ranks still
    # training, divided by N (joined ranks contribute zeros).
    batch, lr, features = 4, 0.05, 3
    rng = np.random.default_rng(11)
    xs = [rng.normal(size=((N + 1 - r) * batch, features)).astype(np.float32) for r in range(N)]
    ys = [x @ np.array([[1.0], [-2.0], [0.5]], np.float32) for x in xs]
    m = keras.Sequential([keras.Input((features,)),
                          keras.layers.Dense(1, use_bias=False, kernel_initializer="ones")])
    m.compile(optimizer=hvd.DistributedOptimizer(keras.optimizers.SGD(lr)), loss="mse")
    try:
        m.fit(xs[R], ys[R], batch_size=batch, epochs=1, shuffle=False, verbose=0)
    finally:
        last = int(hvd.join())
    assert last == 0, last  # rank 0 has the most batches
    hvd.broadcast_variables(m.variables, root_rank=last)
    w = np.ones((features, 1))
    for k in range(N + 1):
        grad = np.zeros_like(w)
        for r in range(N):
            if k < len(xs[r]) // batch:
                xb, yb = xs[r][k * batch:(k + 1) * batch], ys[r][k * batch:(k + 1) * batch]
                grad += 2.0 / batch * xb.T @ (xb @ w - yb)
        w -= lr * grad / N
    np.testing.assert_allclose(m.get_weights()[0], w, rtol=1e-5)
    same_on_every_rank(hvd, weights(m))


@check
def broadcast_callback_equalises_ranks():
    m = model(seed=400 + R)
    callback = hvd.callbacks.BroadcastGlobalVariablesCallback(N - 1)
    callback.set_model(m)
    callback.on_train_begin()
    reference = model(seed=400 + N - 1)
    np.testing.assert_array_equal(weights(m), weights(reference))


@check
def metric_average_callback():
    logs = {"loss": float(R), "accuracy": 10.0 * R}
    hvd.callbacks.MetricAverageCallback().on_epoch_end(0, logs)
    assert logs == {"loss": (N - 1) / 2, "accuracy": 10.0 * (N - 1) / 2}, logs


@check
def warmup_schedule_learning_rates():
    m = model(seed=500)
    m.compile(optimizer=hvd.DistributedOptimizer(keras.optimizers.SGD(0.1)), loss="mse")
    callback = hvd.callbacks.LearningRateWarmupCallback(initial_lr=0.8, warmup_epochs=2,
                                                        steps_per_epoch=4)
    callback.set_model(m)
    callback.params = {"steps": 4}
    callback.on_train_begin()
    seen = []
    for epoch in range(3):
        callback.on_epoch_begin(epoch)
        for batch in range(4):
            callback.on_train_batch_begin(batch)
            seen.append(float(np.asarray(m.optimizer.learning_rate)))
            callback.on_train_batch_end(batch)
    # Warmup: 0.8 / N * (e * (N - 1) / 2 + 1), e = epoch + (batch + 1) / 4; then unchanged.
    expected = [0.8 / N * ((k + 1) / 4 * (N - 1) / 2 + 1) for k in range(8)]
    expected += [expected[-1]] * 4
    np.testing.assert_allclose(seen, expected, rtol=1e-6)
    np.testing.assert_allclose(seen[7], 0.8, rtol=1e-6)


@check
def save_and_load_rewraps_the_optimizer():
    x, y = data()
    m = model(seed=600 + R)
    m.compile(optimizer=hvd.DistributedOptimizer(keras.optimizers.Adam(0.01)), loss="mse")
    m.fit(x, y, batch_size=16, epochs=1, verbose=0,
          callbacks=[hvd.callbacks.BroadcastGlobalVariablesCallback(0)])
    directory = hvd.broadcast_object(tempfile.mkdtemp() if R == 0 else None)
    path = os.path.join(directory, "model.h5" if LEGACY else "model.keras")
    if R == 0:
        m.save(path)
    hvd.allgather_object(None)  # the file exists before anyone loads it
    loaded = hvd.load_model(path)
    np.testing.assert_array_equal(weights(loaded), weights(m))
    assert type(loaded.optimizer).__name__ == "Adam"
    assert int(loaded.optimizer.iterations.numpy()) == int(m.optimizer.iterations.numpy())
    from mpirep.tensorflow.optimizer import _Distributed
    assert isinstance(loaded.optimizer, _Distributed)
    loaded.fit(x, y, batch_size=16, epochs=1, verbose=0)
    same_on_every_rank(hvd, weights(loaded))


@check
def best_model_checkpoint_written_by_rank_zero():
    x, y = data()
    m = model(seed=700)
    m.compile(optimizer=hvd.DistributedOptimizer(keras.optimizers.SGD(0.05)), loss="mse")
    directory = hvd.broadcast_object(tempfile.mkdtemp() if R == 0 else None)
    path = os.path.join(directory, "best.h5" if LEGACY else "best.keras")
    m.fit(x, y, batch_size=16, epochs=2, verbose=0, validation_data=(x, y),
          callbacks=[hvd.callbacks.BestModelCheckpoint(monitor="val_loss", filepath=path)])
    hvd.allgather_object(None)
    assert os.path.exists(path)


# Arguments, if any, name the checks to run.
run(hvd, only=lambda check: not sys.argv[1:] or check.__name__ in sys.argv[1:])
