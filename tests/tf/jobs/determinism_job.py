"""Determinism: 1,000 training steps of a tiny Keras model leave its weights bit-identical on
every rank, in a tf.function loop with DistributedGradientTape and in Model.fit with
DistributedOptimizer. Every rank starts from its own random weights and trains on its own data;
the broadcast at the start and the averaged gradients at every step must keep them in lockstep.
Run under mpirun at any number of ranks."""

import numpy as np
import tensorflow as tf

import mpirep.tensorflow.keras as hvd
from harness import check, mse_training_step, run, same_on_every_rank

hvd.init()
R, N = hvd.rank(), hvd.size()
keras = tf.keras
STEPS = 1000
BATCH = 8


def rank_data(samples=STEPS * BATCH):
    rng = np.random.default_rng(1000 + R)  # each rank's own samples of one linear target
    x = rng.normal(size=(samples, 4)).astype(np.float32)
    y = (x @ np.array([[1.0], [-2.0], [0.5], [3.0]], np.float32) + 0.25).astype(np.float32)
    return x, y


def tiny_model():
    keras.utils.set_random_seed(500 + R)  # a different start on every rank
    return keras.Sequential([keras.Input((4,)), keras.layers.Dense(8, activation="tanh"),
                             keras.layers.Dense(1)])


def flat(model):
    return np.concatenate([np.ravel(w) for w in model.get_weights()])


@check
def custom_loop_weights_identical_after_1000_steps():
    x, y = rank_data()
    model = tiny_model()
    optimizer = keras.optimizers.Adam(0.01)
    hvd.broadcast_variables(model.variables, root_rank=0)

    step = mse_training_step(hvd, model, optimizer)
    losses = [float(step(x[i * BATCH:(i + 1) * BATCH], y[i * BATCH:(i + 1) * BATCH]))
              for i in range(STEPS)]
    assert np.mean(losses[-50:]) < 0.05 * np.mean(losses[:50]), (losses[:3], losses[-3:])
    same_on_every_rank(hvd, flat(model))
    same_on_every_rank(hvd, np.concatenate([np.ravel(v) for v in optimizer.variables]))


@check
def fit_weights_identical_after_1000_steps():
    x, y = rank_data()
    model = tiny_model()
    model.compile(optimizer=hvd.DistributedOptimizer(keras.optimizers.Adam(0.01)), loss="mse")
    history = model.fit(x, y, batch_size=BATCH, epochs=1, shuffle=False, verbose=0,
                        callbacks=[hvd.callbacks.BroadcastGlobalVariablesCallback(0)])
    assert model.optimizer.iterations.numpy() == STEPS
    assert history.history["loss"][0] < 1.0, history.history
    same_on_every_rank(hvd, flat(model))


run(hvd)
