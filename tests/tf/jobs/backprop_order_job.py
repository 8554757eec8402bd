"""Training steps whose collectives the core records in its timeline (MPIREP_TIMELINE, written
by rank 0), for tests/tf/test_overlap.py to read: Model.fit with DistributedOptimizer, then a
tf.function loop with DistributedGradientTape, on a stack of Dense layers (8 gradients per
step). After every step all ranks run one allreduce named ``marker.<loop>.<step>`` through the
numpy API, which brackets the step's collectives in the timeline.

Every step, the other ranks start it only once rank 0 has sent rank 0's requests for every
gradient of the step to the core's rounds (or, should that not happen within
RELEASE_TIMEOUT_S, when that time is up). So when the collectives of a step do not wait for each
other, every gradient is in flight on rank 0 before any of them can end, and with a cycle time
longer than a step (MPIREP_CYCLE_TIME, set by the driver) the small ones fuse; chained in
program order, rank 0 would have one in flight at a time. Run under mpirun at 2 ranks or more,
with MPIREP_CACHE_CAPACITY=0, so that every gradient goes through rank 0 as a request."""

import sys
import threading
import time

import numpy as np
import tensorflow as tf
from mpi4py import MPI

import mpirep
import mpirep.tensorflow as hvd
from harness import mse_training_step
from mpirep._core_loader import core

STEPS = int(sys.argv[1]) if len(sys.argv) > 1 else 12
BATCH = 64
WIDTH = 384
LAYERS = 4
GRADIENTS = 2 * LAYERS  # a kernel and a bias each
RELEASE_TIMEOUT_S = 30
RELEASE_TAG = 9
keras = tf.keras
tf.config.threading.set_intra_op_parallelism_threads(1)

hvd.init()
R, N = hvd.rank(), hvd.size()
COMM = MPI.COMM_WORLD.Dup()


def mark(loop, step):
    mpirep.allreduce(np.zeros(1, np.float32), name=f"marker.{loop}.{step}")


def requests_sent():
    return core().negotiation_stats()["requests_sent"]


def release_when_submitted(before):
    """Rank 0, on a thread of its own while its step runs: tells the other ranks to start their
    step once rank 0 has sent the step's gradients to rank 0's Coordinator (`before`: the count
    of requests sent before the step)."""
    deadline = time.monotonic() + RELEASE_TIMEOUT_S
    while requests_sent() < before + GRADIENTS and time.monotonic() < deadline:
        time.sleep(0.001)
    for rank in range(1, N):
        COMM.send(None, dest=rank, tag=RELEASE_TAG)


def start_step():
    """Called before each step on every rank; returns rank 0's releasing thread, if any."""
    if R == 0:
        thread = threading.Thread(target=release_when_submitted, args=(requests_sent(),))
        thread.start()
        return thread
    request = COMM.irecv(source=0, tag=RELEASE_TAG)
    while not request.test()[0]:  # polls gently; a blocking receive spins a core
        time.sleep(0.001)
    return None


def end_step(loop, step, releasing):
    if releasing is not None:
        releasing.join()
    mark(loop, step)


def model():
    keras.utils.set_random_seed(3)
    return keras.Sequential([keras.Input((WIDTH,))]
                            + [keras.layers.Dense(WIDTH, activation="tanh") for _ in range(LAYERS - 1)]
                            + [keras.layers.Dense(4)])


rng = np.random.default_rng(R)
x = rng.normal(size=(STEPS * BATCH, WIDTH)).astype(np.float32)
y = rng.normal(size=(STEPS * BATCH, 4)).astype(np.float32)


class Paced(keras.callbacks.Callback):
    def on_train_batch_begin(self, batch, logs=None):
        self.releasing = start_step()

    def on_train_batch_end(self, batch, logs=None):
        end_step("fit", batch, self.releasing)


fitted = model()
fitted.compile(optimizer=hvd.DistributedOptimizer(keras.optimizers.SGD(0.01)), loss="mse")
fitted.fit(x, y, batch_size=BATCH, epochs=1, shuffle=False, verbose=0, callbacks=[Paced()])

looped = model()
step = mse_training_step(hvd, looped, keras.optimizers.SGD(0.01))

for i in range(STEPS):
    releasing = start_step()
    step(x[i * BATCH:(i + 1) * BATCH], y[i * BATCH:(i + 1) * BATCH])
    end_step("loop", i, releasing)

mpirep.shutdown()  # closes the timeline
if R == 0:
    print("trained", STEPS, "steps twice")
