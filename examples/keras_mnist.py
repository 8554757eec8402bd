"""Keras Model.fit on MNIST-sized data, data-parallel with mpirep.

    mpirun -np 2 python examples/keras_mnist.py

The data is generated (28x28 grey images of 10 classes, each class a noisy variation of its own
stroke pattern), so nothing is downloaded. Each rank trains on its own shard; only rank 0
prints progress.
"""

import argparse

import numpy as np
import tensorflow as tf

import mpirep.tensorflow.keras as hvd


def mnist_like(samples, seed=0):
    """Images (samples, 28, 28, 1) in [0, 1] and labels 0..9, the same on every rank."""
    rng = np.random.default_rng(seed)
    prototypes = (rng.random((10, 28, 28)) < 0.15).astype(np.float32)
    labels = rng.integers(0, 10, samples)
    noise = rng.normal(0.0, 0.35, (samples, 28, 28)).astype(np.float32)
    images = np.clip(prototypes[labels] + noise, 0.0, 1.0)
    return images[..., None], labels.astype(np.int64)


def build_model():
    return tf.keras.Sequential([
        tf.keras.Input((28, 28, 1)),
        tf.keras.layers.Conv2D(8, 3, activation="relu"),
        tf.keras.layers.MaxPooling2D(),
        tf.keras.layers.Flatten(),
        tf.keras.layers.Dense(32, activation="relu"),
        tf.keras.layers.Dense(10),
    ])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--samples", type=int, default=6000)
    parser.add_argument("--batch-size", type=int, default=64)
    args = parser.parse_args()

    hvd.init()
    images, labels = mnist_like(args.samples)
    images, labels = images[hvd.rank()::hvd.size()], labels[hvd.rank()::hvd.size()]

    model = build_model()
    # The effective batch is size() times larger, so the learning rate scales with it.
    learning_rate = 0.001 * hvd.size()
    optimizer = hvd.DistributedOptimizer(tf.keras.optimizers.Adam(learning_rate))
    model.compile(optimizer=optimizer, metrics=["accuracy"],
                  loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))

    callbacks = [
        hvd.callbacks.BroadcastGlobalVariablesCallback(0),
        hvd.callbacks.MetricAverageCallback(),
        hvd.callbacks.LearningRateWarmupCallback(initial_lr=learning_rate, warmup_epochs=1),
    ]
    history = model.fit(images, labels, batch_size=args.batch_size, epochs=args.epochs,
                        callbacks=callbacks, verbose=2 if hvd.rank() == 0 else 0)
    if hvd.rank() == 0:
        print(f"final loss {history.history['loss'][-1]:.4f} "
              f"accuracy {history.history['accuracy'][-1]:.4f} on {hvd.size()} ranks")


if __name__ == "__main__":
    main()
