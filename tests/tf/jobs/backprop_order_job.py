"""Training steps whose collectives the core records in its timeline (MPIREP_TIMELINE, written
by rank 0), for tests/tf/test_overlap.py to read: Model.fit with DistributedOptimizer, then a
tf.function loop with DistributedGradientTape, on a stack of Dense layers, so that backprop
produces the last layer's gradients first and the first layer's last. After every step all
ranks run one allreduce named ``marker.<loop>.<step>`` through the numpy API, which brackets the
step's collectives in the timeline. Run under mpirun at any number of ranks."""

import sys

import numpy as np
import tensorflow as tf

import mpirep
import mpirep.tensorflow as hvd
from harness import mse_training_step

STEPS = int(sys.argv[1]) if len(sys.argv) > 1 else 12
BATCH = 64
WIDTH = 384  # wide enough that each layer's backprop takes about a millisecond
keras = tf.keras
tf.config.threading.set_intra_op_parallelism_threads(1)

hvd.init()
R = hvd.rank()


def mark(loop, step):
    mpirep.allreduce(np.zeros(1, np.float32), name=f"marker.{loop}.{step}")


def model():
    keras.utils.set_random_seed(3)
    return keras.Sequential([keras.Input((WIDTH,))]
                            + [keras.layers.Dense(WIDTH, activation="tanh") for _ in range(3)]
                            + [keras.layers.Dense(4)])


rng = np.random.default_rng(R)
x = rng.normal(size=(STEPS * BATCH, WIDTH)).astype(np.float32)
y = rng.normal(size=(STEPS * BATCH, 4)).astype(np.float32)


class Mark(keras.callbacks.Callback):
    def on_train_batch_end(self, batch, logs=None):
        mark("fit", batch)


fitted = model()
fitted.compile(optimizer=hvd.DistributedOptimizer(keras.optimizers.SGD(0.01)), loss="mse")
fitted.fit(x, y, batch_size=BATCH, epochs=1, shuffle=False, verbose=0, callbacks=[Mark()])

looped = model()
step = mse_training_step(hvd, looped, keras.optimizers.SGD(0.01))

for i in range(STEPS):
    step(x[i * BATCH:(i + 1) * BATCH], y[i * BATCH:(i + 1) * BATCH])
    mark("loop", i)

mpirep.shutdown()  # closes the timeline
if R == 0:
    print("trained", STEPS, "steps twice")
