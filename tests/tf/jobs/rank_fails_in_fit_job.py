"""Rank 1 fails in the middle of Model.fit, from a callback after its 20th batch, while the
other ranks are already in the next step's gradient allreduce: argv[1] "raise" raises,
"exit" calls sys.exit(3), "freeze" stops the process with SIGSTOP (a process stuck in the
kernel). argv[2] is a folder for what the driver checks, written to files rather than printed,
since a launcher that ends a failed job may cut its output: just before failing, rank 1 writes
the time to failing.txt; each other rank writes the error that ended its fit to rank<N>.txt and
raises it on, uncaught, as a training script would."""

import os
import signal
import sys
import time
from pathlib import Path

import numpy as np
import tensorflow as tf

import mpirep.tensorflow.keras as hvd

hvd.init()
keras = tf.keras
R = hvd.rank()
MODE, RECORDS = sys.argv[1], Path(sys.argv[2])


class FailAfterBatch20(keras.callbacks.Callback):
    def on_train_batch_end(self, batch, logs=None):
        if R == 1 and batch == 20:
            (RECORDS / "failing.txt").write_text(f"{time.time():.3f}")
            if MODE == "raise":
                raise RuntimeError("rank 1 raised in the middle of training")
            if MODE == "freeze":
                os.kill(os.getpid(), signal.SIGSTOP)
            sys.exit(3)


x = np.random.default_rng(R).normal(size=(2048, 8)).astype(np.float32)
y = x.sum(axis=1, keepdims=True)
model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(16, activation="relu"),
                          keras.layers.Dense(1)])
model.compile(optimizer=hvd.DistributedOptimizer(keras.optimizers.SGD(0.01)), loss="mse")
try:
    model.fit(x, y, batch_size=16, epochs=2, verbose=0,
              callbacks=[hvd.callbacks.BroadcastGlobalVariablesCallback(0), FailAfterBatch20()])
except Exception as error:
    if R != 1:
        (RECORDS / f"rank{R}.txt").write_text(f"{type(error).__name__}: {error}")
    raise
