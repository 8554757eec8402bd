"""Keras training throughput of a small ResNet-style CNN on synthetic images, images/sec.

    python benchmarks/tf_keras_cnn.py --plain            # single-process TF, no mpirep
    mpirun -np 1 python benchmarks/tf_keras_cnn.py       # mpirep, 1 rank
    mpirun -np 2 python benchmarks/tf_keras_cnn.py       # mpirep, 2 ranks

Every process uses one intra-op thread. Throughput counts the images of all ranks, over the
timed epochs only (the first epoch, which traces and warms up, is left out).
"""

import argparse
import json
import time

import numpy as np
import tensorflow as tf


def residual_block(x, filters):
    shortcut = x
    y = tf.keras.layers.Conv2D(filters, 3, padding="same", activation="relu")(x)
    y = tf.keras.layers.Conv2D(filters, 3, padding="same")(y)
    return tf.keras.layers.ReLU()(tf.keras.layers.Add()([shortcut, y]))


def small_resnet():
    inputs = tf.keras.Input((32, 32, 3))
    x = tf.keras.layers.Conv2D(16, 3, padding="same", activation="relu")(inputs)
    x = residual_block(x, 16)
    x = tf.keras.layers.Conv2D(32, 3, strides=2, padding="same", activation="relu")(x)
    x = residual_block(x, 32)
    x = tf.keras.layers.GlobalAveragePooling2D()(x)
    return tf.keras.Model(inputs, tf.keras.layers.Dense(10)(x))


def synthetic_data(batch, rank, image=32):
    """Random images and labels, different on each rank, repeated in batches. tf.data's
    autotuning is off: the data is in memory, so there is nothing to tune, and its model thread
    is joined when the iterator is deleted, which at the end of a Model.fit call took up to
    1.3 s and doubled the time of single timed blocks, whatever the optimizer."""
    rng = np.random.default_rng(rank)
    images = rng.random((batch * 8, image, image, 3), dtype=np.float32)
    labels = rng.integers(0, 10, batch * 8)
    options = tf.data.Options()
    options.autotune.enabled = False
    return tf.data.Dataset.from_tensor_slices((images, labels)).repeat().batch(batch) \
        .with_options(options)


class EpochTimer(tf.keras.callbacks.Callback):
    def __init__(self):
        super().__init__()
        self.seconds = []

    def on_epoch_begin(self, epoch, logs=None):
        self._start = time.perf_counter()

    def on_epoch_end(self, epoch, logs=None):
        self.seconds.append(time.perf_counter() - self._start)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--plain", action="store_true", help="plain TensorFlow, no mpirep")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--json", help="write the result to this file (rank 0)")
    args = parser.parse_args()
    tf.config.threading.set_intra_op_parallelism_threads(1)

    rank, size = 0, 1
    optimizer = tf.keras.optimizers.SGD(0.01)
    callbacks = [EpochTimer()]
    if not args.plain:
        import mpirep.tensorflow.keras as hvd

        hvd.init()
        rank, size = hvd.rank(), hvd.size()
        optimizer = hvd.DistributedOptimizer(optimizer)
        callbacks.insert(0, hvd.callbacks.BroadcastGlobalVariablesCallback(0))

    data = synthetic_data(args.batch_size, rank)

    model = small_resnet()
    model.compile(optimizer=optimizer,
                  loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    model.fit(data, steps_per_epoch=args.steps, epochs=args.epochs, verbose=0,
              callbacks=callbacks)
    timed = sum(callbacks[-1].seconds[1:])
    if rank == 0:
        rate = args.batch_size * args.steps * (args.epochs - 1) * size / timed
        kind = "plain TF" if args.plain else f"mpirep np={size}"
        print(f"{kind}: {rate:.1f} images/sec ({size} x batch {args.batch_size}, 1 intra-op "
              f"thread each)")
        if args.json:
            with open(args.json, "w") as f:
                json.dump({"ranks": size, "images_per_sec": rate}, f)


if __name__ == "__main__":
    main()
