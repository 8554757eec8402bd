"""Training with the Replicator at N ranks, per-replica batch B/N, equals training in one process
with batch B on the same data: a small CNN with cross-replica batch norm and no randomness.
Keras 3, or tf_keras when TF_USE_LEGACY_KERAS=1. Run under mpirun at 1, 2 or 3 ranks."""

import numpy as np
import tensorflow as tf

import mpirep.tensorflow as hvd
from harness import check, run, same_on_every_rank
from mpirep.replicator import Replicator

keras = tf.keras
repl = Replicator()
R, N = repl.replica_id, repl.num_replicas
GLOBAL_BATCH, SAMPLES, EPOCHS = 12, 52, 3  # 52 = 4 global batches and 4 examples dropped
# Relative to the largest weight. Only the order of float32 sums differs between the two runs
# (a mean over 12 against a mean of N partial means, and the allreduce's order), a few ulps
# (1.2e-7 each) per step. Measured at 1-3 ranks over 12 steps: weights within 1.3e-7, losses
# within 2.4e-7. 2e-6 leaves room for other sum orders but fails on any real fault, such as a
# sum instead of an average (steps N times too long) or one replica left at its own start.
BOUND = 2e-6


def data():
    rng = np.random.default_rng(3)
    x = rng.normal(size=(SAMPLES, 6, 6, 2)).astype(np.float32)
    y = rng.integers(0, 3, size=SAMPLES).astype(np.int32)
    return tf.data.Dataset.from_tensor_slices((x, y))


class ConvNet:
    """conv -> batch norm over the whole global batch -> tanh -> dense."""

    def __init__(self, seed):
        keras.utils.set_random_seed(seed)
        # No bias: batch norm cancels it, so its gradient is rounding noise, which Adam would
        # scale up to full steps of either sign.
        self.conv = keras.layers.Conv2D(4, 3, use_bias=False)
        self.conv.build((None, 6, 6, 2))
        self.dense = keras.layers.Dense(3)
        self.dense.build((None, 64))
        self.gamma = tf.Variable(tf.random.uniform([4], 0.5, 1.5, seed=seed))
        self.beta = tf.Variable(tf.random.normal([4], seed=seed))
        self.variables = self.conv.trainable_variables + self.dense.trainable_variables + [
            self.gamma, self.beta]

    def __call__(self, x, moments):
        h = self.conv(x)
        mean, variance = moments(h, [0, 1, 2])
        h = tf.tanh((h - mean) * tf.math.rsqrt(variance + 1e-3) * self.gamma + self.beta)
        return self.dense(tf.reshape(h, [-1, 64]))


def loss_of(model, x, y, moments):
    return tf.reduce_mean(keras.losses.sparse_categorical_crossentropy(
        y, model(x, moments), from_logits=True))


def train(model, optimizer, batches, moments, step_runner):
    @tf.function
    def step(x, y):
        with tf.GradientTape() as tape:
            loss = loss_of(model, x, y, moments)
        optimizer.apply_gradients(zip(tape.gradient(loss, model.variables), model.variables))
        return loss

    return [float(step_runner(step, x, y)) for _ in range(EPOCHS) for x, y in batches]


def flat(variables):
    return np.concatenate([np.ravel(v.numpy()) for v in variables])


def train_both(make_optimizer, wrap=True):
    """Trains the network with the Replicator and in this process alone from the chief's start;
    returns the largest weight difference relative to the largest weight, and the losses."""
    with repl.context():
        model = ConvNet(seed=50 + R)  # replicas start apart; context() must fix that
        optimizer = repl.wrap_optimizer(make_optimizer()) if wrap else make_optimizer()
    reference = ConvNet(seed=0)
    for mine, chiefs in zip(reference.variables, model.variables):
        mine.assign(repl.broadcast(chiefs))
    start = flat(reference.variables)

    def distributed_step(step, x, y):
        return repl.reduce("mean", repl.run(step, args=(x, y)))

    losses = train(model, optimizer, repl.distribute_dataset(data(), GLOBAL_BATCH), repl.moments,
                   distributed_step)
    reference_losses = train(reference, make_optimizer(),
                             data().batch(GLOBAL_BATCH, drop_remainder=True),
                             tf.nn.moments, lambda step, x, y: step(x, y))
    assert len(losses) == len(reference_losses) == EPOCHS * (SAMPLES // GLOBAL_BATCH)
    expected = flat(reference.variables)
    assert np.max(np.abs(expected - start)) > 1e-2  # it trained
    error = np.max(np.abs(flat(model.variables) - expected)) / np.max(np.abs(expected))
    if repl.is_chief:
        kind = type(optimizer).__module__.split(".")[0] + " " + type(optimizer).__name__
        loss_error = np.max(np.abs(np.subtract(losses, reference_losses)))
        print(f"{kind}{'' if wrap else ' unwrapped'}: max weight error {error:.2e} of the "
              f"largest weight, loss error {loss_error:.2e}")
    return model, error, losses, reference_losses


def check_equivalence(make_optimizer):
    model, error, losses, reference_losses = train_both(make_optimizer)
    same_on_every_rank(hvd, flat(model.variables))
    assert error < BOUND, error
    np.testing.assert_allclose(losses, reference_losses, rtol=BOUND)


@check
def sgd_with_momentum_matches_one_process():
    check_equivalence(lambda: keras.optimizers.SGD(0.1, momentum=0.9))


@check
def adam_matches_one_process():
    check_equivalence(lambda: keras.optimizers.Adam(0.01))


@check
def without_gradient_averaging_the_error_is_far_above_the_bound():
    # The bound can fail: replicas that apply only their own gradients drift from one process.
    if N > 1:
        _, error, _, _ = train_both(lambda: keras.optimizers.SGD(0.1, momentum=0.9), wrap=False)
        assert error > 100 * BOUND, error


run(hvd)
repl.shutdown()
