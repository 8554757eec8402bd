"""BackupAndRestore and PreemptionCheckpointHandler under Keras 3, or tf_keras when
TF_USE_LEGACY_KERAS=1: a preemption signal reaching one rank mid-epoch stops every rank after
the same batch with a backup, and training resumed from it runs every batch exactly once and
ends with the weights of an uninterrupted run, bit for bit. Run under mpirun at 2 ranks with
a scratch directory as argument.

A stopped run ends in SystemExit, which a job outside a test would leave to end the process;
here each check catches it and resumes in the same process, from the backup on disk."""

import os
import shutil
import signal
import sys
from pathlib import Path

import numpy as np
import tensorflow as tf

import mpirep
import mpirep.tensorflow.keras as hvd
from harness import check, mse_training_step, run, same_on_every_rank
from mpirep.preemption import EXIT_STATUS

hvd.init()
R, N = hvd.rank(), hvd.size()
keras = tf.keras
LEGACY = os.environ.get("TF_USE_LEGACY_KERAS") == "1"
SCRATCH = Path(sys.argv[1])
EPOCHS, BATCH, SAMPLES = 3, 4, 32       # 8 batches per epoch at every rank
STOP_AT = (1, 3)                         # the signal reaches rank 1 during this batch


def data():
    index = np.arange(SAMPLES * N, dtype=np.float32)
    x = np.stack([np.sin(index * (k + 1)) for k in range(6)], axis=1).astype(np.float32)
    y = (x @ np.arange(1, 7, dtype=np.float32)[:, None] / 10 + 0.5).astype(np.float32)
    return x[R::N], y[R::N]


def compiled_model(wrap=hvd.DistributedOptimizer):
    keras.utils.set_random_seed(1234)
    model = keras.Sequential([keras.Input((6,)), keras.layers.Dense(5, activation="tanh"),
                              keras.layers.Dense(1)])
    model.compile(optimizer=wrap(keras.optimizers.Adam(0.01)), loss="mse")
    return model


def weights(model):
    return np.concatenate([np.ravel(w) for w in model.get_weights()])


class TrainedBatches(keras.callbacks.Callback):
    """Records (epoch, batch) of every batch that fit tells its callbacks of, marked "not
    trained" where it did not step the optimizer (a batch replayed after a resume, say); on
    ``signal_at``, this rank sends itself SIGUSR1 as the batch begins."""

    def __init__(self, trained, signal_at=None):
        super().__init__()
        self.trained, self.signal_at = trained, signal_at

    def on_epoch_begin(self, epoch, logs=None):
        self.epoch = epoch

    def micro_steps(self):
        """Keras 3 with gradient_accumulation_steps counts its steps in ``_iterations``."""
        optimizer = self.model.optimizer
        return int(getattr(optimizer, "_iterations", optimizer.iterations).numpy())

    def on_train_batch_begin(self, batch, logs=None):
        self.before = self.micro_steps()
        self.begun = (self.epoch, batch)
        if (self.epoch, batch) == self.signal_at:
            os.kill(os.getpid(), signal.SIGUSR1)

    def on_train_batch_end(self, batch, logs=None):
        assert self.begun == (self.epoch, batch), (self.begun, batch)
        if self.micro_steps() == self.before + 1:
            self.trained.append((self.epoch, batch))
        else:
            self.trained.append(("not trained", self.epoch, batch))


def fit(model, backup, trained, signal_at=None, **options):
    x, y = data()
    model.fit(x, y, batch_size=BATCH, epochs=EPOCHS, shuffle=False, verbose=0,
              callbacks=[hvd.callbacks.BroadcastGlobalVariablesCallback(0),
                         TrainedBatches(trained, signal_at),
                         hvd.callbacks.BackupAndRestore(backup, **options)])


def uninterrupted():
    model = compiled_model()
    fit(model, SCRATCH / f"plain{R}", [])
    return weights(model)


REFERENCE = uninterrupted()
ALL_BATCHES = [(e, b) for e in range(EPOCHS) for b in range(SAMPLES // BATCH)]


@check
def signal_on_one_rank_mid_epoch_then_resume():
    backup = SCRATCH / "signalled"
    trained = []
    try:
        fit(compiled_model(), backup, trained, signal_at=STOP_AT if R == 1 else None)
        raise AssertionError("fit went on after the signal")
    except SystemExit as stopped:
        assert stopped.code == EXIT_STATUS, stopped.code
    assert trained == ALL_BATCHES[:ALL_BATCHES.index(STOP_AT) + 1], trained   # same on every rank
    mpirep.barrier()
    assert (backup / "backup.npz").is_file()
    resumed = compiled_model()   # a fresh start, as a new process would make
    fit(resumed, backup, trained)
    assert trained == ALL_BATCHES, trained
    assert weights(resumed).tobytes() == REFERENCE.tobytes()
    same_on_every_rank(hvd, weights(resumed))
    assert int(resumed.optimizer.iterations.numpy()) == len(ALL_BATCHES)
    mpirep.barrier()
    assert not backup.exists()   # delete_checkpoint


@check
def zero_optimizer_backs_up_its_whole_state():
    """A ZeroRedundancyOptimizer's backup holds every rank's shard, laid out as a plain
    optimizer's: the stopped job resumes to an uninterrupted ZeRO run's weights, bit for bit,
    and DistributedOptimizer resumes from the same backup."""
    zero = hvd.ZeroRedundancyOptimizer
    uninterrupted_zero = compiled_model(zero)
    fit(uninterrupted_zero, SCRATCH / f"zero-plain{R}", [])
    backup, copy = SCRATCH / "zero", SCRATCH / "zero-copy"
    try:
        fit(compiled_model(zero), backup, [], signal_at=STOP_AT if R == 1 else None)
        raise AssertionError("fit went on after the signal")
    except SystemExit as stopped:
        assert stopped.code == EXIT_STATUS, stopped.code
    if R == 0:
        shutil.copytree(backup, copy)
    mpirep.barrier()
    trained = []
    resumed = compiled_model(zero)
    fit(resumed, backup, trained)
    assert trained == ALL_BATCHES[ALL_BATCHES.index(STOP_AT) + 1:], trained
    assert weights(resumed).tobytes() == weights(uninterrupted_zero).tobytes()
    same_on_every_rank(hvd, weights(resumed))
    plain = compiled_model()
    fit(plain, copy, [])
    np.testing.assert_allclose(weights(plain), REFERENCE, rtol=1e-5, atol=1e-6)


@check
def a_stop_waits_for_the_accumulation_to_end():
    """With accumulation over 2 passes (backward_passes_per_step, and Keras 3's
    gradient_accumulation_steps), a signal during a batch after which one pass is accumulated
    stops a batch later, once the optimizer has applied: the backup holds no rank's own
    partial sums, and the resumed run ends bit-identical to an uninterrupted one."""
    def passes(optimizer):
        return hvd.DistributedOptimizer(optimizer, backward_passes_per_step=2)

    def keras_steps(optimizer):
        config = dict(optimizer.get_config(), gradient_accumulation_steps=2)
        return hvd.DistributedOptimizer(type(optimizer).from_config(config))

    wraps = [passes]
    if hasattr(keras.optimizers.Adam(), "gradient_accumulation_steps"):
        wraps.append(keras_steps)
    for wrap in wraps:
        uninterrupted_model = compiled_model(wrap)
        fit(uninterrupted_model, SCRATCH / f"{wrap.__name__}-plain{R}", [])
        backup = SCRATCH / wrap.__name__
        trained = []
        try:
            fit(compiled_model(wrap), backup, trained, signal_at=(1, 2) if R == 1 else None)
            raise AssertionError("fit went on after the signal")
        except SystemExit as stopped:
            assert stopped.code == EXIT_STATUS, stopped.code
        assert trained == ALL_BATCHES[:ALL_BATCHES.index((1, 3)) + 1], (wrap.__name__, trained)
        mpirep.barrier()
        resumed = compiled_model(wrap)
        fit(resumed, backup, trained)
        assert trained == ALL_BATCHES, (wrap.__name__, trained)
        assert weights(resumed).tobytes() == weights(uninterrupted_model).tobytes(), wrap.__name__
        same_on_every_rank(hvd, weights(resumed))


@check
def crash_after_a_batch_backup_resumes_from_it():
    """A rank that crashes (no signal) loses what it trained since the last backup, every 5
    batches: the batches after it run again, from the backed-up state, so the weights still
    match."""
    backup = SCRATCH / "every5"
    trained = []

    class Crash(keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            if (self.model.optimizer.iterations.numpy()) == 12:
                raise RuntimeError("crashed")

    x, y = data()
    model = compiled_model()
    try:
        model.fit(x, y, batch_size=BATCH, epochs=EPOCHS, shuffle=False, verbose=0,
                  callbacks=[TrainedBatches(trained),
                             hvd.callbacks.BackupAndRestore(backup, save_freq=5), Crash()])
    except RuntimeError:
        pass
    assert trained == ALL_BATCHES[:12]
    mpirep.barrier()
    rerun = []
    resumed = compiled_model()
    fit(resumed, backup, rerun, save_freq=5, delete_checkpoint=False)
    assert rerun == ALL_BATCHES[10:], rerun      # backed up after 10 batches: epoch 1, batch 2
    assert weights(resumed).tobytes() == REFERENCE.tobytes()
    mpirep.barrier()
    assert (backup / "backup.npz").is_file()   # kept


@check
def a_backup_of_another_model_is_refused_on_every_rank():
    backup = SCRATCH / "every5"      # the 2-layer model's, kept above
    keras.utils.set_random_seed(1)
    other = keras.Sequential([keras.Input((6,)), keras.layers.Dense(1)])
    other.compile(optimizer=keras.optimizers.SGD(0.1), loss="mse")
    x, y = data()
    try:
        other.fit(x, y, batch_size=BATCH, epochs=1, verbose=0,
                  callbacks=[hvd.callbacks.BackupAndRestore(backup)])
        raise AssertionError("restored a backup of another model")
    except ValueError as error:
        assert f"rank 0 cannot restore {backup / 'backup.npz'}: it holds" in str(error), error


STEPS = 20


def loop_model():
    keras.utils.set_random_seed(99)
    model = keras.Sequential([keras.Input((6,)), keras.layers.Dense(3, activation="tanh"),
                              keras.layers.Dense(1)])
    optimizer = keras.optimizers.Adam(0.02)
    optimizer.build(model.trainable_variables)
    return model, optimizer


def loop(directory, ran, signal_at=None):
    """The custom loop: runs until STEPS, feeding batch total_run_calls."""
    x, y = data()
    model, optimizer = loop_model()
    handler = hvd.PreemptionCheckpointHandler(
        tf.train.Checkpoint(model=model, optimizer=optimizer), directory)
    step = mse_training_step(hvd, model, optimizer)
    try:
        while handler.total_run_calls < STEPS:
            i = handler.total_run_calls
            if i == signal_at:
                os.kill(os.getpid(), signal.SIGUSR1)
            start = i * BATCH % len(x)
            handler.run(step, x[start:start + BATCH], y[start:start + BATCH])
            ran.append(i)
    finally:
        handler.close()
    return weights(model)


@check
def custom_loop_signal_then_resume():
    directory = SCRATCH / "loop"
    reference = loop(SCRATCH / f"loop-plain{R}", [])
    ran = []
    try:
        loop(directory, ran, signal_at=7 if R == 0 else None)
        raise AssertionError("the loop went on after the signal")
    except SystemExit as stopped:
        assert stopped.code == EXIT_STATUS, stopped.code
    assert ran == list(range(7)), ran    # step 7 ran, its return cut off by the exit
    resumed = loop(directory, ran)
    assert ran == list(range(7)) + list(range(8, STEPS)), ran
    assert resumed.tobytes() == reference.tobytes()
    same_on_every_rank(hvd, resumed)
    mpirep.barrier()
    if R == 0:
        assert sorted(p.name for p in directory.iterdir()) == [
            "ckpt-8.data-00000-of-00001", "ckpt-8.index", "latest.json"]


@check
def replicator_steps_through_the_handler():
    """The Replicator's run as the handler's step: stopped by a signal to rank 1, resumed."""
    from mpirep.replicator import Replicator

    replicator = Replicator()
    x, y = data()

    def replicated(directory, ran, signal_at=None):
        keras.utils.set_random_seed(5)
        with replicator.context():
            model = keras.Sequential([keras.Input((6,)), keras.layers.Dense(1)])
            optimizer = replicator.wrap_optimizer(keras.optimizers.SGD(0.05))
        optimizer.build(model.trainable_variables)
        handler = hvd.PreemptionCheckpointHandler(
            tf.train.Checkpoint(model=model, optimizer=optimizer), directory)

        @tf.function
        def step(xb, yb):
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean(tf.square(model(xb) - yb))
            grads = tape.gradient(loss, model.trainable_variables)
            optimizer.apply_gradients(zip(grads, model.trainable_variables))

        try:
            while handler.total_run_calls < 8:
                i = handler.total_run_calls
                if i == signal_at:
                    os.kill(os.getpid(), signal.SIGUSR1)
                handler.run(replicator.run, step, args=(x[i * BATCH:(i + 1) * BATCH],
                                                        y[i * BATCH:(i + 1) * BATCH]))
                ran.append(i)
        finally:
            handler.close()
        return weights(model)

    reference = replicated(SCRATCH / f"repl-plain{R}", [])
    ran = []
    try:
        replicated(SCRATCH / "repl", ran, signal_at=3 if R == 1 else None)
        raise AssertionError("the Replicator's loop went on after the signal")
    except SystemExit as stopped:
        assert stopped.code == EXIT_STATUS, stopped.code
    resumed = replicated(SCRATCH / "repl", ran)
    assert ran == [0, 1, 2, 4, 5, 6, 7], ran
    assert resumed.tobytes() == reference.tobytes()
    same_on_every_rank(hvd, resumed)


@check
def more_than_one_step_per_execution_is_refused():
    """The agreement needs a step boundary after every batch."""
    spelled = ["auto", 2] if LEGACY else [2]   # only tf_keras tunes it ("auto")
    for steps in spelled:
        model = compiled_model()
        model.compile(optimizer=model.optimizer, loss="mse", steps_per_execution=steps)
        try:
            fit(model, SCRATCH / f"steps{R}", [])
            raise AssertionError(f"fit ran with steps_per_execution={steps!r}")
        except ValueError as error:
            assert f"BackupAndRestore (rank {R}): steps_per_execution is {steps!r}; it must be 1" \
                in str(error), error


# Under tf_keras only what differs between the Kerases runs again: the restore and the resumed
# epoch; the custom loops hardly depend on the Keras.
run(hvd, only=lambda check: not LEGACY or check in (signal_on_one_rank_mid_epoch_then_resume,
                                                    more_than_one_step_per_execution_is_refused))
