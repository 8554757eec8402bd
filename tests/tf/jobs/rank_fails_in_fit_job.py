"""Rank 1 fails in the middle of Model.fit, from a callback after its 20th batch, while the
other ranks are already in the next step's gradient allreduce: argv[1] "raise" raises,
"exit" calls sys.exit(3), "freeze" stops the process with SIGSTOP (a process stuck in the
kernel). Just before, it prints `FAILING <unix time>`; the driver checks that the job ends soon
after, and how the survivors name rank 1."""

import os
import signal
import sys
import time

import numpy as np
import tensorflow as tf

import mpirep.tensorflow.keras as hvd

hvd.init()
keras = tf.keras
R = hvd.rank()


class FailAfterBatch20(keras.callbacks.Callback):
    def on_train_batch_end(self, batch, logs=None):
        if R == 1 and batch == 20:
            print(f"FAILING {time.time():.3f}", flush=True)
            if sys.argv[1] == "raise":
                raise RuntimeError("rank 1 raised in the middle of training")
            if sys.argv[1] == "freeze":
                os.kill(os.getpid(), signal.SIGSTOP)
            sys.exit(3)


x = np.random.default_rng(R).normal(size=(2048, 8)).astype(np.float32)
y = x.sum(axis=1, keepdims=True)
model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(16, activation="relu"),
                          keras.layers.Dense(1)])
model.compile(optimizer=hvd.DistributedOptimizer(keras.optimizers.SGD(0.01)), loss="mse")
model.fit(x, y, batch_size=16, epochs=2, verbose=0,
          callbacks=[hvd.callbacks.BroadcastGlobalVariablesCallback(0), FailAfterBatch20()])
