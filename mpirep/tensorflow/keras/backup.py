"""``BackupAndRestore`` for ``Model.fit`` across ranks: rank 0 backs the training state up, every
rank restores the same state, and a preemption signal saves and ends the job at a step boundary
all ranks agree on (docs/preemption.md)."""

import os
import shutil

import numpy as np
import tensorflow as tf

import mpirep
from mpirep.preemption import SignalWatcher, atomic_write, parse_signals, stop_job
from mpirep.tensorflow import _zero_checkpoint
from mpirep.tensorflow._trackables import (accumulation_steps, build_optimizer,
                                            mid_accumulation, own_variables,
                                            tracked_variables, zero_optimizer)
from mpirep.tensorflow.functions import broadcast_object, broadcast_variables

BACKUP_FILE = "backup.npz"


class _ResumeEpoch:
    """What tf_keras's fit asks, after on_train_begin, for the epoch to start at."""

    def __init__(self, epoch):
        self.epoch = epoch

    def maybe_load_initial_counters_from_ckpt(self, steps_per_epoch, initial_epoch, mode=None):
        return self.epoch, 0


def _is_tf_keras(model):
    """tf_keras's fit asks the model's _training_state for the epoch to start at; Keras 3's
    reads the model's _initial_epoch."""
    return hasattr(model, "_maybe_load_initial_counters_from_ckpt")


def _steps_per_execution(model):
    """The compiled steps_per_execution: a number, or "auto" where tf_keras tunes it."""
    if getattr(model, "_autotune_steps_per_execution", False):
        return "auto"
    return int(np.asarray(getattr(model, "steps_per_execution", None) or 1))


def _variable_name(variable):
    return getattr(variable, "path", None) or variable.name


def _hide_replayed_batches():
    """Makes fit's callback list keep quiet about the batches that a resumed epoch reads only
    to drop (they were trained before the backup): every callback hears of each trained batch
    once, under its index in the epoch. Once per process."""
    callback_list = tf.keras.callbacks.CallbackList
    if getattr(callback_list, "_mpirep_hides_replayed", False):
        return
    for hook in ("on_train_batch_begin", "on_train_batch_end"):
        setattr(callback_list, hook, _quiet_while_replaying(getattr(callback_list, hook), hook))
    callback_list._mpirep_hides_replayed = True


def _quiet_while_replaying(dispatch, hook):
    def quiet_while_replaying(self, batch, logs=None):
        if any(isinstance(c, BackupAndRestore) and c._replays(hook) for c in self.callbacks):
            return None
        return dispatch(self, batch, logs)

    return quiet_while_replaying


class BackupAndRestore(tf.keras.callbacks.Callback):
    """Backs up the weights, the optimizer state, the epoch and the batch of ``Model.fit`` to
    ``backup_dir`` at the end of every epoch (``save_freq="epoch"``) or every ``save_freq``
    batches, and restores them when ``fit`` starts again with a backup there, resuming at the
    batch after the one saved, mid-epoch too. Only rank 0 writes, to a temporary file that a
    rename makes the backup, so a backup is never torn; rank 0 reads it back and broadcasts it,
    so every rank resumes from the same state. On a signal of the ``preemption_signals``
    setting it saves at the next step boundary and ends the job (docs/preemption.md). With
    ``delete_checkpoint`` the backup is removed once ``fit`` completes.

    The model must be built before ``fit``, every run must feed ``fit`` the same batches in the
    same order, and ``steps_per_execution`` must be 1."""

    def __init__(self, backup_dir, save_freq="epoch", delete_checkpoint=True):
        super().__init__()
        if not backup_dir:
            raise ValueError("BackupAndRestore: backup_dir is empty")
        if save_freq != "epoch" and (isinstance(save_freq, bool) or not isinstance(save_freq, int)
                                     or save_freq < 1):
            raise ValueError(f"BackupAndRestore: save_freq must be 'epoch' or a positive number "
                             f"of batches, not {save_freq!r}")
        self.backup_dir = os.fspath(backup_dir)
        self.save_freq = save_freq
        self.delete_checkpoint = delete_checkpoint
        self._path = os.path.join(self.backup_dir, BACKUP_FILE)
        self._watcher = None
        self._epoch = 0
        self._batches_done = 0      # of the current epoch
        self._since_saved = 0
        self._to_skip = 0
        self._replaying = False     # the batch now in fit's hands is one read only to drop
        _hide_replayed_batches()

    # --- restoring --------------------------------------------------------------------------
    def on_train_begin(self, logs=None):
        model = self.model
        if not model.built:
            raise ValueError(f"BackupAndRestore (rank {mpirep.rank()}): the model must be built "
                             "before fit (call it on a batch, or give it an Input)")
        steps = _steps_per_execution(model)
        if steps != 1:
            raise ValueError(f"BackupAndRestore (rank {mpirep.rank()}): steps_per_execution "
                             f"is {steps!r}; it must be 1, for the ranks "
                             "to agree on stopping after a batch (docs/preemption.md)")
        build_optimizer(model.optimizer, model.trainable_variables)
        self._check_accumulation_boundaries()
        zero = zero_optimizer(model.optimizer)   # the optimizer, or the one it wraps
        if zero is not None and zero._mpirep_zero.process_set.size() != mpirep.size():
            raise ValueError(f"BackupAndRestore (rank {mpirep.rank()}): the "
                             "ZeroRedundancyOptimizer must shard over every rank, not a process "
                             "set of some of them")
        # A sharded ZeroRedundancyOptimizer's state is backed up whole, gathered from every
        # rank, laid out as a plain optimizer's: the backup is the one a plain optimizer makes.
        # A wrapper's own variables (a loss scale) are backed up beside it.
        self._zero = zero if zero is not None and _zero_checkpoint.is_sharded(zero) else None
        self._sharded = self._zero is not None
        variables = tracked_variables([model, model.optimizer])
        if self._sharded:
            in_zero = {id(v) for v in own_variables(zero)}
            variables = [v for v in variables if id(v) not in in_zero]
        self._variables = variables
        resume = broadcast_object(self._restore_on_rank0() if mpirep.rank() == 0 else None, 0,
                                  name="mpirep.backup.resume")
        if resume and "error" in resume:
            raise ValueError(f"BackupAndRestore: rank 0 cannot restore {self._path}: "
                             f"{resume['error']}")
        if resume:
            broadcast_variables(self._variables, 0)
            if self._sharded:
                _zero_checkpoint.load(self._zero, resume["optimizer_state"])
            self._resume_at(resume["epoch"], resume["batch"])
        self._since_saved = 0
        self._watcher = SignalWatcher(parse_signals(mpirep.config().preemption_signals)).install()

    def _check_accumulation_boundaries(self):
        """A backup holds no gradients of micro-steps not yet applied (each rank's own), so
        with accumulation every backup must fall where the optimizer has just applied."""
        steps = accumulation_steps(self.model.optimizer)
        if steps == 1:
            return
        every = self.params.get("steps") if self.save_freq == "epoch" else self.save_freq
        if every is None or every % steps:
            what = ("an epoch's steps" if self.save_freq == "epoch" else "save_freq")
            raise ValueError(
                f"BackupAndRestore (rank {mpirep.rank()}): the optimizer accumulates "
                f"gradients over {steps} micro-steps, and {what} ({every}) is not a multiple of "
                f"{steps}: a backup would lose the micro-steps' gradients not yet applied "
                "(docs/preemption.md)")

    def _restore_on_rank0(self):
        if not os.path.exists(self._path):
            return None
        optimizer_state = (len(_zero_checkpoint.plain_layout(self._zero))
                           if self._sharded else 0)
        with np.load(self._path) as saved:
            count = int(saved["count"])
            if count != len(self._variables) + optimizer_state:
                return {"error": f"it holds {count} variables, the model and optimizer "
                                 f"{len(self._variables) + optimizer_state}"}
            for i, variable in enumerate(self._variables):
                value = saved[f"v{i}"]
                if tuple(value.shape) != tuple(variable.shape):
                    return {"error": f"variable {i} ({_variable_name(variable)}) has shape "
                                     f"{tuple(variable.shape)}, the backup {value.shape}"}
                variable.assign(value)
            resume = {"epoch": int(saved["epoch"]), "batch": int(saved["batch"])}
            if self._sharded:   # every rank takes its shard from these
                first = len(self._variables)
                resume["optimizer_state"] = {str(p): saved[f"v{first + p}"]
                                             for p in range(optimizer_state)}
            return resume

    def _resume_at(self, epoch, batch):
        model = self.model
        if _is_tf_keras(model):
            model._training_state = _ResumeEpoch(epoch)
        else:
            model._initial_epoch = epoch
        self._epoch, self._batches_done = epoch, batch
        if batch:
            self._skip_batches(batch)

    def _skip_batches(self, count):
        """Makes the first ``count`` steps of the resumed epoch read their batch and drop it:
        those batches were trained on before the backup."""
        self._to_skip = count
        train_function = self.model.train_function

        def dropping(iterator):
            if self._to_skip:
                next(iterator)
                self._to_skip -= 1
                return {}
            self.model.train_function = train_function
            return train_function(iterator)

        self.model.train_function = dropping

    def _replays(self, hook):
        """Whether the batch that fit's ``hook`` is about is one read only to drop."""
        if hook == "on_train_batch_begin":
            self._replaying = self._to_skip > 0
        return self._replaying

    # --- backing up -------------------------------------------------------------------------
    def on_epoch_begin(self, epoch, logs=None):
        self._epoch = epoch
        if not self._to_skip:
            self._batches_done = 0

    def on_train_batch_end(self, batch, logs=None):
        self._batches_done = batch + 1
        self._since_saved += 1
        # A stop waits for the optimizer to apply what it accumulated (at most N - 1 batches).
        stop = self._watcher.should_stop() and not mid_accumulation(self.model.optimizer)
        if stop or (self.save_freq != "epoch" and self._since_saved >= self.save_freq):
            self._save(self._epoch, self._batches_done)
        if stop:
            stop_job(mpirep.rank(), self._describe(),
                     f"run the same job again: it resumes from {self._path}")

    def on_epoch_end(self, epoch, logs=None):
        if self.save_freq == "epoch":
            self._save(epoch + 1, 0)

    def _describe(self):
        return f"epoch {self._epoch}, {self._batches_done} batches done, to {self._path}"

    def _save(self, epoch, batch):
        """Backs up the state after ``batch`` batches of ``epoch``; every rank calls it."""
        self._since_saved = 0
        if batch and batch == self.params.get("steps"):
            epoch, batch = epoch + 1, 0
        values = [v.numpy() for v in self._variables] if mpirep.rank() == 0 else []
        if self._sharded:   # a collective: every rank gathers
            values += _zero_checkpoint.full_state(self._zero)
        if mpirep.rank() != 0:
            return
        arrays = {f"v{i}": np.asarray(value) for i, value in enumerate(values)}
        with atomic_write(self._path) as temporary, open(temporary, "wb") as file:
            np.savez(file, count=len(values), epoch=epoch, batch=batch, **arrays)

    def on_train_end(self, logs=None):
        self._watcher.uninstall()
        if _is_tf_keras(self.model):
            self.model._training_state = None
        else:
            self.model._initial_epoch = None
        if self.delete_checkpoint and mpirep.rank() == 0:
            shutil.rmtree(self.backup_dir, ignore_errors=True)
