"""Rank program of the elastic cluster tests: a small Keras model trained with Model.fit under
hvd.elastic (KerasState and its three callbacks), committing after every batch.

Every rank prints `ELASTIC <json>` lines the tests read:
  start   host and pid, once per process
  reset   a reset callback ran (with size() of the new world)
  resume  the training function starts (call 0 of the generation, or a later call at an
          epoch boundary): the epoch and batch it starts from, and a digest of the whole state
          (weights and optimizer)
  step    a batch is done and committed: epoch, batch (batches of the epoch done) and digest
  commit  an epoch is done and committed
  final   training is over: the digest of the whole state

The data of batch b of epoch e is a closed-form function of its global sample indices, split
over the ranks, so any number of ranks trains on the same global batches.  --dump PATH: rank 0
of a restarted generation writes the state it resumed from; --load PATH starts from such a
state instead, which is how a test computes what training from a commit gives.
"""
import argparse
import hashlib
import json
import os
import pickle
import socket
import sys
import time

import numpy as np
import tensorflow as tf

import mpirep.tensorflow.keras as hvd

GLOBAL_BATCH = 8
BASE_LR = 0.01


def parse():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--steps", type=int, default=8, help="batches per epoch")
    parser.add_argument("--step-seconds", type=float, default=0.0, help="least time a batch takes")
    parser.add_argument("--dump")
    parser.add_argument("--load")
    return parser.parse_args()


def say(event, **fields):
    line = json.dumps({"event": event, "gen": GENERATION, "rank": hvd.rank(),
                       "size": hvd.size(), "time": time.time(), **fields})
    sys.stdout.write(f"ELASTIC {line}\n")
    sys.stdout.flush()


def batches(epoch, batch, steps, epochs):
    """This rank's share of every global batch from (epoch, batch) to the end."""
    first, last = (epoch * steps + batch) * GLOBAL_BATCH, epochs * steps * GLOBAL_BATCH
    index = np.arange(first, last).reshape(-1, GLOBAL_BATCH)
    per_rank = GLOBAL_BATCH // hvd.size()
    mine = index[:, hvd.rank() * per_rank:(hvd.rank() + 1) * per_rank].reshape(-1, 1)
    x = np.sin(mine * np.array([[0.1, 0.37, 1.3, 2.9]])).astype(np.float32)
    y = (x @ np.array([[1.0], [-2.0], [0.5], [3.0]], np.float32) + 0.25).astype(np.float32)
    return tf.data.Dataset.from_tensor_slices((x, y)).batch(per_rank)


def digest(state):
    arrays, _ = state.snapshot()
    hasher = hashlib.sha256()
    for _, array in arrays:
        hasher.update(np.ascontiguousarray(array).tobytes())
    return hasher.hexdigest()[:16]


class Trace(tf.keras.callbacks.Callback):
    def __init__(self, state, step_seconds):
        super().__init__()
        self.state, self.step_seconds = state, step_seconds
        self.started = time.monotonic()

    def on_train_batch_begin(self, batch, logs=None):
        self.started = time.monotonic()

    def on_train_batch_end(self, batch, logs=None):
        time.sleep(max(0.0, self.step_seconds - (time.monotonic() - self.started)))
        say("step", epoch=self.state.epoch, batch=self.state.batch, digest=digest(self.state))

    def on_epoch_end(self, epoch, logs=None):
        say("commit", epoch=self.state.epoch, batch=self.state.batch, digest=digest(self.state))


def main():
    args = parse()
    tf.config.experimental.enable_op_determinism()
    hvd.init()
    say("start", host=socket.gethostname(), pid=os.getpid())
    tf.keras.utils.set_random_seed(7)
    model = tf.keras.Sequential([tf.keras.layers.Input((4,)),
                                 tf.keras.layers.Dense(16, activation="tanh"),
                                 tf.keras.layers.Dense(1)])
    optimizer = hvd.DistributedOptimizer(tf.keras.optimizers.Adam(BASE_LR * hvd.size()))
    model.compile(optimizer=optimizer, loss="mse")
    state = hvd.elastic.KerasState(model, epoch=0, batch=0)

    def on_reset():
        optimizer.learning_rate.assign(BASE_LR * hvd.size())
        say("reset")

    state.register_reset_callbacks([on_reset])
    if args.load:
        with open(args.load, "rb") as f:
            arrays, objects = pickle.load(f)
        state.load_snapshot(arrays, objects)
    callbacks = [hvd.elastic.UpdateEpochStateCallback(state),
                 hvd.elastic.UpdateBatchStateCallback(state),
                 hvd.elastic.CommitStateCallback(state, batches_per_commit=1),
                 Trace(state, args.step_seconds)]
    calls = []

    @hvd.elastic.run
    def train(state):
        say("resume", epoch=state.epoch, batch=state.batch, digest=digest(state), call=len(calls))
        if args.dump and GENERATION > 0 and hvd.rank() == 0 and not calls:
            arrays, objects = state.snapshot()
            with open(args.dump, "wb") as f:
                pickle.dump(([np.array(a) for _, a in arrays], objects), f)
        calls.append(True)
        state.model.fit(batches(state.epoch, state.batch, args.steps, args.epochs),
                        steps_per_epoch=args.steps, epochs=args.epochs - state.epoch,
                        callbacks=callbacks, shuffle=False, verbose=0)

    train(state)
    say("final", epoch=state.epoch, batch=state.batch, digest=digest(state))


GENERATION = int(os.environ.get("MPIREP_ELASTIC_GENERATION", "0"))
if __name__ == "__main__":
    main()
