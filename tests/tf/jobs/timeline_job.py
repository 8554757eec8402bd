"""A timeline of Keras training, started and stopped at run time with Horovod's names
(hvd.start_timeline / hvd.stop_timeline, from mpirep.tensorflow.keras): one epoch of STEPS steps
is recorded into argv[1], the epoch before it and the one after are not. tests/tf/test_tf.py
reads the file."""
import sys

import numpy as np
import tensorflow as tf

import mpirep
import mpirep.tensorflow
import mpirep.tensorflow.keras as hvd

STEPS = 4
BATCH = 8

for module in (mpirep.tensorflow, hvd):
    assert module.start_timeline is mpirep.start_timeline and module.stop_timeline is mpirep.stop_timeline

hvd.init()
rng = np.random.default_rng(hvd.rank())
x = rng.normal(size=(STEPS * BATCH, 3)).astype(np.float32)
y = rng.normal(size=(STEPS * BATCH, 2)).astype(np.float32)
tf.keras.utils.set_random_seed(1)
model = tf.keras.Sequential([tf.keras.Input((3,)), tf.keras.layers.Dense(5, activation="tanh"),
                             tf.keras.layers.Dense(2)])
model.compile(optimizer=hvd.DistributedOptimizer(tf.keras.optimizers.SGD(0.01)), loss="mse")
model.fit(x, y, batch_size=BATCH, epochs=1, verbose=0,
          callbacks=[hvd.callbacks.BroadcastGlobalVariablesCallback(0)])
hvd.start_timeline(sys.argv[1], mark_cycles=True)
model.fit(x, y, batch_size=BATCH, epochs=1, verbose=0)
hvd.stop_timeline()
model.fit(x, y, batch_size=BATCH, epochs=1, verbose=0)
print(f"rank {hvd.rank()}: timeline job done", flush=True)
