"""A training job that survives preemption, for tests/cluster/test_requeue.py, run by the
requeueable sbatch template under srun:

    python preemption_job.py OUT fit|loop EPOCH,BATCH [--signalled RANK] [--hold-save]

``fit`` trains with Model.fit and hvd.callbacks.BackupAndRestore (backup in OUT/backup),
``loop`` with a custom loop through hvd.PreemptionCheckpointHandler (checkpoints in OUT/ckpt),
10 batches an epoch at every rank. A start finding no saved state is start 0, one resuming from
it start 1, whether Slurm requeued the job or it was submitted again.

In start 0 every rank (or only RANK, with --signalled) stops at the end of batch BATCH of epoch
EPOCH, writes its pid to OUT/paused.<rank>, and waits there until its own preemption signal has
arrived, sent by the test once those files exist; the other ranks go on into the step's
agreement, which waits for the paused ones. With --hold-save, rank 0's save at the agreed stop
waits, through mpirep.preemption._atomic's test hook, before its rename until rank 0 receives
a signal during it; it writes OUT/saving first, for the test to look at the old backup meanwhile.

Each rank appends every batch that stepped its optimizer to OUT/trained.<rank>, as "start epoch
batch", and rank 0 every backup it writes to OUT/saves, as "start file". A start that completes
training also trains an uninterrupted model of the same seed and data, and rank 0 writes both
final weights to OUT/<start>.npz."""

import argparse
import os
import time
from pathlib import Path

import numpy as np
import tensorflow as tf

import mpirep.tensorflow.keras as hvd
from mpirep.preemption import _atomic

parser = argparse.ArgumentParser()
parser.add_argument("out", type=Path)
parser.add_argument("mode", choices=["fit", "loop"])
parser.add_argument("pause_at", type=lambda text: tuple(int(v) for v in text.split(",")))
parser.add_argument("--signalled", type=int)
parser.add_argument("--hold-save", action="store_true")
ARGS = parser.parse_args()
OUT = ARGS.out

hvd.init()
R, N = hvd.rank(), hvd.size()
keras = tf.keras
EPOCHS, BATCH, SAMPLES = 2, 4, 40        # 10 batches per epoch at every rank
BATCHES = SAMPLES // BATCH
SAVED_STATE = OUT / "backup" / "backup.npz" if ARGS.mode == "fit" else OUT / "ckpt" / "latest.json"
START = int(SAVED_STATE.exists())


def data():
    index = np.arange(SAMPLES * N, dtype=np.float32)
    x = np.stack([np.cos(index * (k + 1)) for k in range(6)], axis=1).astype(np.float32)
    y = (x @ np.arange(1, 7, dtype=np.float32)[:, None] / 10 - 0.3).astype(np.float32)
    return x[R::N], y[R::N]


def seeded_model():
    keras.utils.set_random_seed(4321)
    return keras.Sequential([keras.Input((6,)), keras.layers.Dense(5, activation="tanh"),
                             keras.layers.Dense(1)])


def weights(model):
    return np.concatenate([np.ravel(w) for w in model.get_weights()])


def wait_until(condition, what):
    give_up_at = time.monotonic() + 120
    while not condition():
        if time.monotonic() > give_up_at:
            raise RuntimeError(f"rank {R}: no {what} within 120 s")
        time.sleep(0.05)


def log_save(temporary, path):
    with open(OUT / "saves", "a") as file:
        file.write(f"{START} {os.path.relpath(path, OUT)}\n")


def hold_save_until_signalled(watcher):
    def hold(temporary, path):
        signals_before = len(watcher.received)
        log_save(temporary, path)
        (OUT / "saving").write_text(temporary)
        wait_until(lambda: len(watcher.received) > signals_before, "signal during the save")
    return hold


def trained(epoch, batch, watcher, log):
    """Logs a batch that stepped the optimizer; in start 0 pauses at ARGS.pause_at."""
    if log is None:
        return
    with open(log, "a") as file:
        file.write(f"{START} {epoch} {batch}\n")
    if START or (epoch, batch) != ARGS.pause_at:
        return
    if R == 0 and ARGS.hold_save:
        _atomic.before_replace = hold_save_until_signalled(watcher)
    if ARGS.signalled in (None, R):
        (OUT / f"paused.{R}").write_text(str(os.getpid()))
        wait_until(lambda: watcher.received, "preemption signal")


class Record(keras.callbacks.Callback):
    def __init__(self, log, backup):
        super().__init__()
        self.log, self.backup = log, backup

    def on_epoch_begin(self, epoch, logs=None):
        self.epoch = epoch

    def on_train_batch_begin(self, batch, logs=None):
        self.before = int(self.model.optimizer.iterations.numpy())

    def on_train_batch_end(self, batch, logs=None):
        if int(self.model.optimizer.iterations.numpy()) == self.before + 1:
            trained(self.epoch, batch, self.backup._watcher, self.log)


def fit(backup_dir, log=None):
    model = seeded_model()
    model.compile(optimizer=hvd.DistributedOptimizer(keras.optimizers.Adam(0.01)), loss="mse")
    backup = hvd.callbacks.BackupAndRestore(backup_dir)
    x, y = data()
    model.fit(x, y, batch_size=BATCH, epochs=EPOCHS, shuffle=False, verbose=0,
              callbacks=[hvd.callbacks.BroadcastGlobalVariablesCallback(0),
                         Record(log, backup), backup])
    return weights(model)


def loop(checkpoint_dir, log=None):
    """The custom loop: step i trains batch i % BATCHES, of epoch i // BATCHES."""
    model = seeded_model()
    optimizer = keras.optimizers.Adam(0.01)
    optimizer.build(model.trainable_variables)
    handler = hvd.PreemptionCheckpointHandler(
        tf.train.Checkpoint(model=model, optimizer=optimizer), checkpoint_dir)
    x, y = data()

    @tf.function
    def train(xb, yb):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(model(xb, training=True) - yb))
        tape = hvd.DistributedGradientTape(tape)
        optimizer.apply_gradients(zip(tape.gradient(loss, model.trainable_variables),
                                      model.trainable_variables))

    def step(i):
        epoch, batch = divmod(i, BATCHES)
        train(x[batch * BATCH:(batch + 1) * BATCH], y[batch * BATCH:(batch + 1) * BATCH])
        trained(epoch, batch, handler._watcher, log)

    try:
        while handler.total_run_calls < EPOCHS * BATCHES:
            handler.run(step, handler.total_run_calls)
    finally:
        handler.close()
    return weights(model)


if R == 0:
    _atomic.before_replace = log_save
train = fit if ARGS.mode == "fit" else loop
resumed = train(OUT / SAVED_STATE.parent.name, OUT / f"trained.{R}")
plain = train(OUT / f"plain-{SAVED_STATE.parent.name}")
if R == 0:
    np.savez(OUT / f"{START}.npz", resumed=resumed, plain=plain)
    print(f"start {START}: training complete", flush=True)
