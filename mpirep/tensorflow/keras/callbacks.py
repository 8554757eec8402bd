"""Keras callbacks for data-parallel training, with horovod.tensorflow.keras.callbacks' names.

They subclass ``tf.keras`` classes, which are Keras 3's or tf_keras's as TF_USE_LEGACY_KERAS
selects, so they work with whichever Keras the model uses.
"""

import numpy as np
import tensorflow as tf

import mpirep
from mpirep.tensorflow._gradients import VariableSet
from mpirep.tensorflow._trackables import optimizer_variables, zero_optimizer
from mpirep.tensorflow.functions import broadcast_variables
from mpirep.tensorflow.keras import _jit
from mpirep.tensorflow.keras.backup import BackupAndRestore  # noqa: F401
from mpirep.tensorflow.mpi_ops import join


class _Callback(tf.keras.callbacks.Callback):
    """Every mpirep callback, before the first step, compiles the train step without XLA where
    XLA cannot hold mpirep's collectives (keras/_jit.py)."""

    def on_train_begin(self, logs=None):
        _jit.settle(self.model)


def _broadcast_model_state(model, root_rank, local_variables=()):
    variables = list(model.variables)
    if getattr(model, "optimizer", None) is not None:
        variables += optimizer_variables(model.optimizer)
    kept = VariableSet(local_variables)
    broadcast_variables([v for v in variables if v not in kept], root_rank)


class BroadcastGlobalVariablesCallback(_Callback):
    """Makes every rank start from ``root_rank``'s weights and optimizer state: broadcasts them
    when training begins, if the model is built by then, and again after the first batch, when
    a model built lazily and an optimizer that creates its slots lazily have done so.
    ``local_variables`` keep each rank's own value."""

    def __init__(self, root_rank, device="", local_variables=None):
        super().__init__()
        self.root_rank = root_rank
        self.local_variables = list(local_variables or [])
        self._after_first_batch = False

    def _broadcast(self):
        _broadcast_model_state(self.model, self.root_rank, self.local_variables)

    def on_train_begin(self, logs=None):
        super().on_train_begin(logs)
        # Every rank builds its model alike, so every rank takes this branch alike.
        if self.model.built:
            self._broadcast()

    def on_train_batch_end(self, batch, logs=None):
        if not self._after_first_batch:
            self._after_first_batch = True
            self._broadcast()


class JoinCallback(_Callback):
    """Lets ranks whose datasets hold different numbers of batches train together in
    ``Model.fit``, where they would otherwise hang in the gradient allreduce of a step that
    ranks with less data never take.

    A rank that runs out of batches joins at the end of its epoch (see ``join``): until every
    rank has, it takes part in the others' gradient allreduces with zeros, and the average
    still divides by the number of all ranks. Then every rank takes the weights and optimizer
    state of the rank that joined last, which ran the most steps, so all go on from the same
    state. Put it first among the callbacks, before any that communicates at the end of an
    epoch (MetricAverageCallback, BestModelCheckpoint)."""

    def on_epoch_end(self, epoch, logs=None):
        _broadcast_model_state(self.model, int(join()))


class MetricAverageCallback(_Callback):
    """Replaces each epoch's metrics in ``logs`` by their average over ranks. Put it before
    callbacks that read the metrics (checkpointing, early stopping, LR schedules)."""

    def on_epoch_end(self, epoch, logs=None):
        if not logs:
            return
        names = sorted(logs)
        values = np.array([float(logs[name]) for name in names], np.float64)
        averaged = mpirep.allreduce(values, op=mpirep.Average, name=f"metric_average.{epoch}")
        for name, value in zip(names, averaged):
            logs[name] = float(value)


def _get_lr(optimizer):
    return float(np.asarray(optimizer.learning_rate))


def _set_lr(optimizer, value):
    optimizer.learning_rate = value


class LearningRateScheduleCallback(_Callback):
    """Sets the learning rate to ``initial_lr * multiplier(epoch)`` from ``start_epoch`` up to
    ``end_epoch``. With ``staircase`` the epoch is whole and the rate changes at epoch starts;
    otherwise it is fractional (epoch + batch / steps_per_epoch) and changes every batch. With
    ``momentum_correction`` an optimizer's momentum is scaled by new_lr / old_lr for the batch
    in which the rate changes, as Goyal et al. advise; Keras 3 and tf_keras optimizers keep
    momentum as a Python number fixed when the train step is traced, so for them it is left
    alone."""

    def __init__(self, initial_lr, multiplier, start_epoch=0, end_epoch=None, staircase=True,
                 momentum_correction=True, steps_per_epoch=None):
        super().__init__()
        if not callable(multiplier):
            factor = multiplier
            multiplier = lambda epoch: factor  # noqa: E731
        self.initial_lr = initial_lr
        self.multiplier = multiplier
        self.start_epoch = start_epoch
        self.end_epoch = end_epoch
        self.staircase = staircase
        self.momentum_correction = momentum_correction
        self.steps_per_epoch = steps_per_epoch
        self._epoch = 0
        self._restore_momentum = None

    def _in_range(self, epoch):
        return epoch >= self.start_epoch and (self.end_epoch is None or epoch < self.end_epoch)

    def _adjust(self, epoch):
        optimizer = self.model.optimizer
        old_lr = _get_lr(optimizer)
        new_lr = self.initial_lr * self.multiplier(epoch)
        _set_lr(optimizer, new_lr)
        momentum = getattr(optimizer, "momentum", None)
        # Only a momentum held in a variable can change once the train step is traced.
        if self.momentum_correction and hasattr(momentum, "assign") and old_lr > 0:
            self._restore_momentum = float(np.asarray(momentum))
            momentum.assign(self._restore_momentum * new_lr / old_lr)

    def on_train_begin(self, logs=None):
        super().on_train_begin(logs)
        if self.steps_per_epoch is None:
            self.steps_per_epoch = self.params.get("steps")
        if not self.staircase and not self.steps_per_epoch:
            raise ValueError("a non-staircase schedule needs steps_per_epoch (pass it, or give "
                             "fit a dataset whose length Keras knows)")

    def on_epoch_begin(self, epoch, logs=None):
        self._epoch = epoch
        if self.staircase and self._in_range(epoch):
            self._adjust(epoch)

    def on_train_batch_begin(self, batch, logs=None):
        if not self.staircase and self._in_range(self._epoch):
            self._adjust(self._epoch + batch / self.steps_per_epoch)

    def on_train_batch_end(self, batch, logs=None):
        if self._restore_momentum is not None:
            self.model.optimizer.momentum.assign(self._restore_momentum)
            self._restore_momentum = None

    def on_epoch_end(self, epoch, logs=None):
        if logs is not None:
            logs["lr"] = _get_lr(self.model.optimizer)


class LearningRateWarmupCallback(LearningRateScheduleCallback):
    """Ramps the learning rate linearly from ``initial_lr / size()`` to ``initial_lr`` over the
    first ``warmup_epochs`` epochs, batch by batch (Goyal et al., "Accurate, Large Minibatch
    SGD"). ``initial_lr`` is the rate meant for all ranks together."""

    def __init__(self, initial_lr, warmup_epochs=5, momentum_correction=True,
                 steps_per_epoch=None, verbose=0):
        self.warmup_epochs = warmup_epochs
        self.verbose = verbose

        def multiplier(epoch):
            # Shifted by one batch so that the last batch of the warmup runs at initial_lr.
            epoch += 1.0 / self.steps_per_epoch
            size = mpirep.size()
            return 1.0 / size * (epoch * (size - 1) / warmup_epochs + 1)

        super().__init__(initial_lr, multiplier, start_epoch=0, end_epoch=warmup_epochs,
                         staircase=False, momentum_correction=momentum_correction,
                         steps_per_epoch=steps_per_epoch)

    def on_epoch_end(self, epoch, logs=None):
        super().on_epoch_end(epoch, logs)
        if epoch == self.warmup_epochs - 1 and self.verbose and mpirep.rank() == 0:
            print(f"\nEpoch {epoch + 1}: finished learning rate warmup to "
                  f"{_get_lr(self.model.optimizer):g}.")


class BestModelCheckpoint(tf.keras.callbacks.ModelCheckpoint):
    """Keeps the best model seen so far (by ``monitor``) at ``filepath``, written by rank 0
    only. A ZeroRedundancyOptimizer's state is gathered first, at every epoch's check."""

    def __init__(self, monitor="val_loss", verbose=0, mode="auto", save_freq="epoch",
                 filepath="best.keras"):
        super().__init__(filepath, monitor=monitor, verbose=verbose, save_best_only=True,
                         mode=mode, save_freq=save_freq)

    def on_train_begin(self, logs=None):
        super().on_train_begin(logs)
        _jit.settle(self.model)

    def _save_model(self, *args, **kwargs):
        # Keras calls this on every rank at every save_freq point, whether or not it saves:
        # a ZeroRedundancyOptimizer's shards are gathered there on all ranks alike.
        zero = zero_optimizer(getattr(self.model, "optimizer", None))
        if zero is not None:
            zero.gather_state()
        if mpirep.rank() == 0:
            super()._save_model(*args, **kwargs)
        if zero is not None:
            zero._mpirep_release_gathered_state()
