"""A GAN trained with mpirep's Replicator: two wrapped optimizers, more discriminator steps than
generator steps, and a discriminator whose batch norm uses the statistics of the whole global
batch (as BigGAN did with TF-Replicator).

    mpirun -np 2 python examples/replicator_gan.py

The generator learns a 2-D Gaussian. Only the chief prints.
"""

import argparse

import numpy as np
import tensorflow as tf

from mpirep.replicator import Replicator

keras = tf.keras
REAL_MEAN = np.array([2.0, -1.0], np.float32)
REAL_SCALE = np.array([[0.6, 0.0], [0.3, 0.2]], np.float32)  # real = mean + z @ scale
NOISE = 4


class CrossReplicaBatchNorm(tf.Module):
    """Batch norm whose mean and variance are taken over every replica's batch."""

    def __init__(self, repl, features):
        super().__init__()
        self.repl = repl
        self.gamma = tf.Variable(tf.ones([features]))
        self.beta = tf.Variable(tf.zeros([features]))

    def __call__(self, x):
        mean, variance = self.repl.moments(x, [0])
        return (x - mean) * tf.math.rsqrt(variance + 1e-3) * self.gamma + self.beta


class Discriminator(tf.Module):
    def __init__(self, repl):
        super().__init__()
        self.hidden = keras.layers.Dense(32)
        self.hidden.build((None, 2))
        self.norm = CrossReplicaBatchNorm(repl, 32)
        self.out = keras.layers.Dense(1)
        self.out.build((None, 32))

    def __call__(self, x):
        return self.out(tf.nn.leaky_relu(self.norm(self.hidden(x)), 0.2))

    @property
    def weights(self):
        return self.hidden.trainable_variables + [self.norm.gamma, self.norm.beta] + \
            self.out.trainable_variables


def real_samples(samples, seed=0):
    z = np.random.default_rng(seed).normal(size=(samples, 2)).astype(np.float32)
    return tf.data.Dataset.from_tensor_slices(REAL_MEAN + z @ REAL_SCALE)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--generator-steps", type=int, default=300)
    parser.add_argument("--discriminator-steps", type=int, default=2,
                        help="discriminator updates per generator update")
    parser.add_argument("--batch-size", type=int, default=128, help="global batch")
    args = parser.parse_args()

    repl = Replicator()
    with repl.context():
        generator = keras.Sequential([keras.Input((NOISE,)),
                                      keras.layers.Dense(32, activation="relu"),
                                      keras.layers.Dense(2)])
        discriminator = Discriminator(repl)
        g_optimizer = repl.wrap_optimizer(keras.optimizers.Adam(2e-3, beta_1=0.5))
        d_optimizer = repl.wrap_optimizer(keras.optimizers.Adam(2e-3, beta_1=0.5))
    # Outside context(): its state must differ per replica, or every replica draws the same noise.
    noise = tf.random.Generator.from_seed(1000 + repl.replica_id)
    per_replica = repl.input_context().per_replica_batch_size(args.batch_size)

    def bce(logits, label):
        return tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(
            tf.fill(tf.shape(logits), label), logits))

    @tf.function
    def discriminator_step(real):
        fake = generator(noise.normal([per_replica, NOISE]))
        with tf.GradientTape() as tape:
            # One pass over real and fake together, so both share the batch statistics.
            logits = discriminator(tf.concat([real, fake], 0))
            loss = bce(logits[:per_replica], 1.0) + bce(logits[per_replica:], 0.0)
        d_optimizer.apply_gradients(zip(tape.gradient(loss, discriminator.weights),
                                        discriminator.weights))
        return loss

    @tf.function
    def generator_step(real):
        with tf.GradientTape() as tape:
            fake = generator(noise.normal([per_replica, NOISE]))
            logits = discriminator(tf.concat([real, fake], 0))
            loss = bce(logits[per_replica:], 1.0)
        g_optimizer.apply_gradients(zip(tape.gradient(loss, generator.trainable_variables),
                                        generator.trainable_variables))
        return loss

    real = iter(repl.distribute_dataset(real_samples(8192).repeat(), args.batch_size))
    for step in range(args.generator_steps):
        for _ in range(args.discriminator_steps):
            d_loss = repl.run(discriminator_step, args=(next(real),))
        g_loss = repl.run(generator_step, args=(next(real),))
        if (step + 1) % 100 == 0:
            d_loss, g_loss = (float(repl.reduce("mean", v)) for v in (d_loss, g_loss))
            if repl.is_chief:
                print(f"step {step + 1}: discriminator loss {d_loss:.3f} generator loss "
                      f"{g_loss:.3f}")

    fake = repl.gather(generator(noise.normal([1024, NOISE]))).numpy()
    if repl.is_chief:
        def show(array):
            return np.round(np.asarray(array, np.float64), 2).tolist()

        print(f"final generated mean {show(fake.mean(0))} (real {show(REAL_MEAN)}), covariance "
              f"{show(np.cov(fake.T))} (real {show(REAL_SCALE.T @ REAL_SCALE)})")
    repl.shutdown()


if __name__ == "__main__":
    main()
