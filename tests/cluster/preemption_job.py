"""A Model.fit job with hvd.callbacks.BackupAndRestore for tests/cluster/test_requeue.py,
run by the requeueable sbatch template under srun: python preemption_job.py OUT EPOCH,BATCH

On its first start every rank stops at the end of batch BATCH of epoch EPOCH, rank 0 writes
OUT/paused, and each waits there until its own preemption signal has arrived (the test sends
it with scancel --signal once OUT/paused exists), so that the agreed stop falls after that
batch. Each rank appends every batch that stepped its optimizer to OUT/trained.<rank>, as
"start epoch batch". A start that completes training also trains an uninterrupted model of
the same seed and data, and rank 0 writes both final weights to OUT/<start>.npz."""

import os
import sys
import time
from pathlib import Path

import numpy as np
import tensorflow as tf

import mpirep.tensorflow.keras as hvd

hvd.init()
R, N = hvd.rank(), hvd.size()
keras = tf.keras
OUT = Path(sys.argv[1])
PAUSE_AT = tuple(int(v) for v in sys.argv[2].split(","))
START = int(os.environ.get("SLURM_RESTART_COUNT", "0"))
EPOCHS, BATCH, SAMPLES = 2, 4, 40        # 10 batches per epoch at every rank


def data():
    index = np.arange(SAMPLES * N, dtype=np.float32)
    x = np.stack([np.cos(index * (k + 1)) for k in range(6)], axis=1).astype(np.float32)
    y = (x @ np.arange(1, 7, dtype=np.float32)[:, None] / 10 - 0.3).astype(np.float32)
    return x[R::N], y[R::N]


def compiled_model():
    keras.utils.set_random_seed(4321)
    model = keras.Sequential([keras.Input((6,)), keras.layers.Dense(5, activation="tanh"),
                              keras.layers.Dense(1)])
    model.compile(optimizer=hvd.DistributedOptimizer(keras.optimizers.Adam(0.01)), loss="mse")
    return model


class Record(keras.callbacks.Callback):
    def __init__(self, log, backup=None):
        super().__init__()
        self.log, self.backup = log, backup

    def on_epoch_begin(self, epoch, logs=None):
        self.epoch = epoch

    def on_train_batch_begin(self, batch, logs=None):
        self.before = int(self.model.optimizer.iterations.numpy())

    def on_train_batch_end(self, batch, logs=None):
        if self.log and int(self.model.optimizer.iterations.numpy()) == self.before + 1:
            with open(self.log, "a") as file:
                file.write(f"{START} {self.epoch} {batch}\n")
        if self.backup and START == 0 and (self.epoch, batch) == PAUSE_AT:
            if R == 0:
                (OUT / "paused").write_text("")
            give_up_at = time.monotonic() + 120
            while not self.backup._watcher.received:   # the test's scancel --signal is on its way
                if time.monotonic() > give_up_at:
                    raise RuntimeError(f"rank {R}: no preemption signal within 120 s")
                time.sleep(0.05)


def fit(model, backup_dir, log=None):
    backup = hvd.callbacks.BackupAndRestore(backup_dir)
    x, y = data()
    model.fit(x, y, batch_size=BATCH, epochs=EPOCHS, shuffle=False, verbose=0,
              callbacks=[hvd.callbacks.BroadcastGlobalVariablesCallback(0),
                         Record(log, backup), backup])


def weights(model):
    return np.concatenate([np.ravel(w) for w in model.get_weights()])


resumed = compiled_model()
fit(resumed, OUT / "backup", OUT / f"trained.{R}")
plain = compiled_model()
fit(plain, OUT / "plain-backup")
if R == 0:
    np.savez(OUT / f"{START}.npz", resumed=weights(resumed), plain=weights(plain))
    print(f"start {START}: training complete", flush=True)
