"""A custom training loop: GradientTape in a tf.function, data-parallel with mpirep.

    mpirun -np 2 python examples/tf2_custom_loop.py

Regression on generated data; each rank trains on its own shard. Only rank 0 prints.
"""

import argparse

import numpy as np
import tensorflow as tf

import mpirep.tensorflow as hvd


def shard(samples, features=32, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(samples, features)).astype(np.float32)
    y = np.sin(x @ rng.normal(size=(features, 1)) / 4).astype(np.float32)
    return x[hvd.rank()::hvd.size()], y[hvd.rank()::hvd.size()]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--samples", type=int, default=8192)
    parser.add_argument("--batch-size", type=int, default=64)
    args = parser.parse_args()

    hvd.init()
    x, y = shard(args.samples)
    dataset = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(1024, seed=hvd.rank())
    dataset = dataset.batch(args.batch_size, drop_remainder=True)

    model = tf.keras.Sequential([tf.keras.Input((x.shape[1],)),
                                 tf.keras.layers.Dense(64, activation="relu"),
                                 tf.keras.layers.Dense(1)])
    optimizer = tf.keras.optimizers.SGD(0.01 * hvd.size(), momentum=0.9)

    @tf.function
    def train_step(features, targets, first_batch):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(model(features, training=True) - targets))
        tape = hvd.DistributedGradientTape(tape)
        gradients = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(gradients, model.trainable_variables))
        # Start every rank from rank 0's state, once the first step has created the
        # optimizer's variables.
        if first_batch:
            hvd.broadcast_variables(model.variables, root_rank=0)
            hvd.broadcast_variables(optimizer.variables, root_rank=0)
        return loss

    first = True
    for epoch in range(args.epochs):
        losses = []
        for features, targets in dataset:
            losses.append(float(train_step(features, targets, first)))
            first = False
        mean_loss = hvd.allreduce(tf.constant(np.mean(losses)), name="epoch_loss")
        if hvd.rank() == 0:
            print(f"epoch {epoch + 1}: loss {float(mean_loss):.4f}")
    if hvd.rank() == 0:
        print(f"final loss {float(mean_loss):.4f} on {hvd.size()} ranks")


if __name__ == "__main__":
    main()
