"""The Keras feature matrix (tests/tf/keras_matrix.py) on tf.keras (Keras 3, or tf_keras under
TF_USE_LEGACY_KERAS=1), every case in this one process: each trains as one process does on the
union of the ranks' data with the same global batch (the same case on a process set of rank 0
alone, where mpirep's optimizers and tape are the plain ones), within its dtype's
tolerance, with weights bit-identical on every rank; with BackupAndRestore it crashes mid-epoch
and resumes, callbacks hearing of each trained batch once; with MetricAverageCallback the
averaged loss is the one process's. Each refused combination raises its error where
keras_matrix.REFUSALS says. Argument: "pairwise" (default) or "full"; a second
argument runs only the cases whose label (keras_matrix.label) holds it."""

import os
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np
import tensorflow as tf

import mpirep.tensorflow.keras as hvd
from harness import check, run, same_on_every_rank

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import keras_matrix  # noqa: E402

hvd.init()
R, N = hvd.rank(), hvd.size()
keras = tf.keras
LEGACY = os.environ.get("TF_USE_LEGACY_KERAS") == "1"
FLAVOUR = "tf_keras" if LEGACY else (
    "keras3" if int(keras.__version__.split(".")[0]) >= 3 else "keras2")
MODE = sys.argv[1] if sys.argv[1:] else "pairwise"
ONLY = sys.argv[2] if sys.argv[2:] else ""     # runs the cases whose label holds this
EPOCHS, STEPS, BATCH, FEATURES = 2, 4, 4, 5    # STEPS per epoch, BATCH per rank
CRASH_AFTER = 6                                 # batches, with a backup every 2
# About 10 times the largest difference seen (float32 1.5e-8, mixed_float16 3.5e-5,
# mixed_bfloat16 1.3e-4), and far below how far training moves the weights (MOVED).
TOLERANCE = {"float32": dict(rtol=1e-5, atol=1e-6),
             "mixed_bfloat16": dict(rtol=0, atol=2e-3),
             "mixed_float16": dict(rtol=0, atol=5e-4)}
MOVED = 0.02    # at least, the largest change of a weight in one process's training
# Rank 0 alone trains the one-process references.
ALONE_SET = hvd.add_process_set([0]) if N > 1 else hvd.global_process_set
SCRATCH = Path(hvd.broadcast_object(tempfile.mkdtemp(prefix="keras_matrix_") if R == 0 else None))


def data():
    """The union, and this rank's part: global batch k is the ranks' batches k, in rank order."""
    index = np.arange(STEPS * N * BATCH, dtype=np.float32)
    x = np.stack([np.sin(index * (k + 1) * 0.37) for k in range(FEATURES)], axis=1)
    y = (np.tanh(x @ np.linspace(-1, 1, FEATURES)[:, None]) + 0.2).astype(np.float32)
    mine = np.concatenate([np.arange(k * N * BATCH + R * BATCH, k * N * BATCH + (R + 1) * BATCH)
                           for k in range(STEPS)])
    return (x, y), (x[mine], y[mine])


def build_model(seed):
    keras.utils.set_random_seed(seed)
    return keras.Sequential([keras.Input((FEATURES,)), keras.layers.Dense(6, activation="tanh"),
                             keras.layers.Dense(1, dtype="float32")])


def weights(model):
    return np.concatenate([np.ravel(w).astype(np.float64) for w in model.get_weights()])


def jit(case):
    """Whether the case compiles its step with XLA."""
    return case.get("jit", False)


def optimizer(case, process_set):
    accumulation = case["accumulation"]
    keras_steps = accumulation in ("gradient_accumulation_steps", "both")
    opt = keras.optimizers.Adam(0.01, **({"gradient_accumulation_steps": 2} if keras_steps
                                          else {}))
    passes = dict(backward_passes_per_step=2, average_aggregated_gradients=True) if \
        accumulation in ("backward_passes_per_step", "both") else {}
    if case["training"] == "DistributedOptimizer":
        return hvd.DistributedOptimizer(opt, process_set=process_set, **passes)
    if case["training"] == "ZeroRedundancyOptimizer":
        return hvd.ZeroRedundancyOptimizer(opt, process_set=process_set, **passes)
    if case["dtype"] == "mixed_float16":   # what compile does for fit
        return keras.mixed_precision.LossScaleOptimizer(opt)
    return opt


class Batches(keras.callbacks.Callback):
    """Records (epoch, batch) of every batch fit tells its callbacks of; raises after
    ``crash_after`` batches in all."""

    def __init__(self, seen, crash_after=None):
        super().__init__()
        self.seen, self.crash_after = seen, crash_after

    def on_epoch_begin(self, epoch, logs=None):
        self.epoch = epoch

    def on_train_batch_end(self, batch, logs=None):
        self.seen.append((self.epoch, batch))
        if self.crash_after is not None and len(self.seen) == self.crash_after:
            raise RuntimeError("crashed on purpose")


def fit(case, distributed, crash_after=None, seen=None, backup_dir=None, save_freq=2):
    """(model, history) of ``case``, at every rank or on this rank alone on the union."""
    process_set = hvd.global_process_set if distributed else ALONE_SET
    union, mine = data()
    x, y = mine if distributed else union
    batch = BATCH if distributed else N * BATCH
    # Only the broadcast makes ranks that start apart start alike.
    model = build_model(1000 + (R if distributed and case["broadcast"] else 0))
    opt = optimizer(case, process_set)
    if case["training"] == "DistributedGradientTape":
        return model, train_with_tape(case, model, opt, process_set, x, y, batch)
    model.compile(optimizer=opt, loss="mse", jit_compile=jit(case))
    callbacks = []
    if case["broadcast"]:
        callbacks.append(hvd.callbacks.BroadcastGlobalVariablesCallback(0))
    if case["metric_average"] and distributed:
        callbacks.append(hvd.callbacks.MetricAverageCallback())
    if case["warmup"]:
        callbacks.append(hvd.callbacks.LearningRateWarmupCallback(0.01, warmup_epochs=1,
                                                                  steps_per_epoch=STEPS))
    if backup_dir is not None:
        callbacks.append(hvd.callbacks.BackupAndRestore(backup_dir, save_freq=save_freq))
    if seen is not None:
        callbacks.append(Batches(seen, crash_after))
    history = model.fit(x, y, batch_size=batch, epochs=EPOCHS, shuffle=False, verbose=0,
                        callbacks=callbacks)
    return model, history.history


def train_with_tape(case, model, opt, process_set, x, y, batch):
    if case["broadcast"]:
        hvd.broadcast_variables(model.variables, root_rank=0)
    scaled = case["dtype"] == "mixed_float16"

    @tf.function(jit_compile=jit(case))
    def step(xb, yb):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(tf.cast(model(xb, training=True), tf.float32) - yb))
            target = (opt.scale_loss(loss) if hasattr(opt, "scale_loss")
                      else opt.get_scaled_loss(loss)) if scaled else loss
        tape = hvd.DistributedGradientTape(tape, process_set=process_set)
        grads = tape.gradient(target, model.trainable_variables)
        if scaled and hasattr(opt, "get_unscaled_gradients"):   # tf_keras's
            grads = opt.get_unscaled_gradients(grads)
        opt.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    losses = []
    for _ in range(EPOCHS):
        epoch = [float(step(x[k * batch:(k + 1) * batch], y[k * batch:(k + 1) * batch]))
                 for k in range(STEPS)]
        losses.append(float(np.mean(epoch)))
    return {"loss": losses}


_references = {}


def reference(case):
    """(weights, history) of one process: trained by rank 0 alone (the others wait, leaving
    it the cores) and shared; once for every case that trains alike on one process. Neither
    the broadcast (the ranks start alike there), nor the metric average, nor the backup change
    it, and ZeRO on one rank is the plain optimizer, as DistributedOptimizer is."""
    tape = case["training"] == "DistributedGradientTape"
    key = (case["dtype"], tape, case["accumulation"], case["warmup"])
    if key not in _references:
        alone = dict(case, broadcast=False, metric_average=False, backup=False)
        computed = None
        if R == 0:
            model, history = fit(alone, distributed=False)
            computed = weights(model), history["loss"]
        _references[key] = hvd.broadcast_object(computed, name="keras_matrix.reference")
    return _references[key]


def run_case(case):
    policy = keras.mixed_precision.global_policy()
    keras.mixed_precision.set_global_policy(case["dtype"])
    try:
        reference_weights, reference_losses = reference(case)
        if case["backup"]:
            trained, history = resumed_after_a_crash(case)
        else:
            trained, history = fit(case, distributed=True)
    finally:
        keras.mixed_precision.set_global_policy(policy)
    tolerance = TOLERANCE[case["dtype"]]
    moved = np.max(np.abs(reference_weights - weights(build_model(1000))))
    assert moved > MOVED, f"one process's training moved the weights by {moved} only"
    np.testing.assert_allclose(weights(trained), reference_weights, **tolerance,
                               err_msg="weights against one process")
    same_on_every_rank(hvd, weights(trained))
    if case["metric_average"] and not case["backup"]:
        np.testing.assert_allclose(history["loss"], reference_losses, **tolerance,
                                   err_msg="averaged loss against one process's")


_backups = []


def resumed_after_a_crash(case):
    """Trains with BackupAndRestore every 2 batches, crashing after CRASH_AFTER on every rank;
    resumes in a fresh model and optimizer. Fit's callbacks must hear of every batch once."""
    _backups.append(case)
    directory = SCRATCH / f"backup{len(_backups)}"
    seen = []
    try:
        fit(case, True, crash_after=CRASH_AFTER, seen=seen, backup_dir=directory)
        raise AssertionError("no crash")
    except RuntimeError as error:
        assert "crashed on purpose" in str(error), error
    hvd.allgather_object(0)   # the backup is written before anyone reads it
    model, history = fit(case, True, seen=seen, backup_dir=directory)
    expected = [(e, b) for e in range(EPOCHS) for b in range(STEPS)]
    assert seen == expected, seen
    return model, history


def check_case(case):
    def one_case():
        run_case(case)
    one_case.__name__ = keras_matrix.label(case)
    return check(one_case)


def check_refusal(name, overrides, raised, fragment):
    def refused():
        case = {k: v[0] for k, v in keras_matrix.DIMENSIONS.items()}
        case.update(overrides)
        save_freq = case.pop("save_freq", 2)
        directory = SCRATCH / f"refused{R}" if case["backup"] else None
        try:
            fit(case, True, backup_dir=directory, save_freq=save_freq)
        except Exception as error:   # noqa: BLE001  the class is what is checked
            assert type(error).__name__ == raised and fragment in str(error), repr(error)
        else:
            raise AssertionError(f"{name}: nothing raised")
    refused.__name__ = f"refused: {name}"
    return check(refused)


for matrix_case in keras_matrix.cases(FLAVOUR, MODE, N):
    if ONLY in keras_matrix.label(matrix_case):
        check_case(matrix_case)
for refusal_name, _, refusal_case, _, refusal_error, refusal_fragment in \
        keras_matrix.refusals(FLAVOUR):
    check_refusal(refusal_name, refusal_case, refusal_error, refusal_fragment)


@check
def clean_up():
    hvd.allgather_object(0)
    if R == 0:
        shutil.rmtree(SCRATCH, ignore_errors=True)


run(hvd)
