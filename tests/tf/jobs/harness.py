"""A minimal runner for checks that every rank executes in the same order under mpirun.

Each check runs on every rank; failures are gathered to rank 0, which prints one line per
failure naming the rank, then the totals. The process exits 1 when any rank failed a check.
"""

import sys
import time
import traceback

import tensorflow as tf

_checks = []


def check(function):
    _checks.append(function)
    return function


def run(hvd, only=None):
    failures = []
    started = time.time()
    for function in _checks:
        if only and not only(function):
            continue
        try:
            function()
        except Exception:  # report every failure, keep the ranks in step
            failures.append(f"rank {hvd.rank()}: {function.__name__}: "
                            f"{traceback.format_exc(limit=4)}")
    everyone = [f for per_rank in hvd.allgather_object(failures) for f in per_rank]
    if hvd.rank() == 0:
        for failure in everyone:
            print("FAIL", failure, file=sys.stderr)
        print(f"{len(_checks)} checks on {hvd.size()} ranks, {len(everyone)} failures, "
              f"{time.time() - started:.1f}s")
    sys.stdout.flush()
    sys.exit(1 if everyone else 0)


def same_on_every_rank(hvd, value):
    """Asserts that ``value`` (numpy-convertible) is bit-identical on every rank."""
    import numpy as np

    mine = np.asarray(value)
    for other in hvd.allgather_object(mine):
        assert other.dtype == mine.dtype and other.tobytes() == mine.tobytes(), \
            f"differs between ranks: {mine} vs {other}"


def expect_error(error_class, fn):
    """Fails unless fn() raises error_class."""
    try:
        fn()
    except error_class:
        return
    raise AssertionError(f"no {error_class.__name__}")


def mse_training_step(hvd, model, optimizer):
    """A tf.function training step on the mean squared error, reduced by hvd's
    DistributedGradientTape; it returns the loss."""
    @tf.function
    def step(xb, yb):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(model(xb, training=True) - yb))
        tape = hvd.DistributedGradientTape(tape)
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    return step
