# A Horovod Keras script, ported to mpirep by changing only its import (the line below).
# It follows Horovod's own tensorflow2_keras_mnist example, with generated MNIST-sized data in
# place of the download and a narrower network, so that it runs in seconds on a CPU.
#
#     mpirun -np 2 python examples/horovod_port/tensorflow2_keras_mnist.py

import argparse

import numpy as np
import tensorflow as tf
import mpirep.tensorflow.keras as hvd  # was: import horovod.tensorflow.keras as hvd

parser = argparse.ArgumentParser()
parser.add_argument("--epochs", type=int, default=4)
args = parser.parse_args()

# Horovod: initialize Horovod.
hvd.init()

# Horovod: pin GPU to be used to process local rank (one GPU per process)
gpus = tf.config.experimental.list_physical_devices("GPU")
for gpu in gpus:
    tf.config.experimental.set_memory_growth(gpu, True)
if gpus:
    tf.config.experimental.set_visible_devices(gpus[hvd.local_rank()], "GPU")

rng = np.random.default_rng(1234)
strokes = (rng.random((10, 28, 28)) < 0.15).astype(np.float32)
labels = rng.integers(0, 10, 12000)
images = np.clip(strokes[labels] + rng.normal(0, 0.5, (12000, 28, 28)), 0, 1)

dataset = tf.data.Dataset.from_tensor_slices(
    (tf.cast(images[..., tf.newaxis], tf.float32), tf.cast(labels, tf.int64)))
dataset = dataset.repeat().shuffle(10000, seed=hvd.rank()).batch(64)

mnist_model = tf.keras.Sequential([
    tf.keras.layers.Conv2D(8, [3, 3], activation="relu", input_shape=(28, 28, 1)),
    tf.keras.layers.Conv2D(16, [3, 3], activation="relu"),
    tf.keras.layers.MaxPooling2D(pool_size=(2, 2)),
    tf.keras.layers.Dropout(0.25),
    tf.keras.layers.Flatten(),
    tf.keras.layers.Dense(64, activation="relu"),
    tf.keras.layers.Dropout(0.5),
    tf.keras.layers.Dense(10, activation="softmax"),
])

# Horovod: adjust learning rate based on number of GPUs.
scaled_lr = 0.001 * hvd.size()
opt = tf.keras.optimizers.Adam(scaled_lr)

# Horovod: add Horovod DistributedOptimizer.
opt = hvd.DistributedOptimizer(opt, backward_passes_per_step=1,
                               average_aggregated_gradients=True)

mnist_model.compile(loss=tf.losses.SparseCategoricalCrossentropy(),
                    optimizer=opt,
                    metrics=["accuracy"])

callbacks = [
    # Horovod: broadcast initial variable states from rank 0 to all other processes.
    hvd.callbacks.BroadcastGlobalVariablesCallback(0),
    # Horovod: average metrics among workers at the end of every epoch.
    hvd.callbacks.MetricAverageCallback(),
    # Horovod: using `lr = 1.0 * hvd.size()` from the very beginning leads to worse final
    # accuracy. Scale the learning rate `lr = 1.0` ---> `lr = 1.0 * hvd.size()` during
    # the first epoch.
    hvd.callbacks.LearningRateWarmupCallback(initial_lr=scaled_lr, warmup_epochs=1, verbose=1),
]

# Horovod: save checkpoints only on worker 0 to prevent other workers from corrupting them.
if hvd.rank() == 0:
    callbacks.append(tf.keras.callbacks.ModelCheckpoint("/tmp/checkpoint-{epoch}.weights.h5",
                                                        save_weights_only=True))

# Horovod: write logs on worker 0.
verbose = 2 if hvd.rank() == 0 else 0

# Train the model.
# Horovod: adjust number of steps based on number of GPUs.
history = mnist_model.fit(dataset, steps_per_epoch=40 // hvd.size(), callbacks=callbacks,
                          epochs=args.epochs, verbose=verbose)
if hvd.rank() == 0:
    print("final loss %.4f accuracy %.4f" % (history.history["loss"][-1],
                                             history.history["accuracy"][-1]))
