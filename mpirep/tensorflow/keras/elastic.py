"""Elastic training for Keras, with the names of ``horovod.tensorflow.keras.elastic``: the state
of a model and its optimizer, and the callbacks that commit it and keep its counters.  The
rest of the interface is mpirep/tensorflow/elastic.py's, re-exported (docs/elastic.md has the
map of every layer)."""

import tensorflow as tf

from mpirep.elastic.reset_loop import EpochRealigned
from mpirep.tensorflow.elastic import *  # noqa: F401,F403  (the shared part of the interface)
from mpirep.tensorflow.elastic import TensorFlowKerasState

_Callback = tf.keras.callbacks.Callback


class KerasState(TensorFlowKerasState):
    """The state of a Keras model and its optimizer, plus attributes (``epoch``, ``batch``)."""


class CommitStateCallback(_Callback):
    """Commits ``state`` every ``batches_per_commit`` batches and at the end of every epoch."""

    def __init__(self, state, batches_per_commit=1):
        super().__init__()
        self.state = state
        self.batches_per_commit = batches_per_commit
        self._left = batches_per_commit

    def on_train_begin(self, logs=None):
        self._left = self.batches_per_commit

    def on_train_batch_end(self, batch, logs=None):
        self._left -= 1
        if self._left == 0:
            self.state.commit()
            self._left = self.batches_per_commit

    def on_epoch_end(self, epoch, logs=None):
        self.state.commit()


class UpdateBatchStateCallback(_Callback):
    """Keeps ``state.batch`` at the number of batches of the current epoch done, and 0 between
    epochs.

    After a reset in the middle of an epoch, that epoch runs only the batches it had left:
    when they are done the callback ends ``fit`` (after the epoch's end callbacks, so the
    epoch is counted and committed), and ``run`` calls the training function again, whose
    ``fit`` goes on with the next epoch.  A reset that came between an epoch's last batch and
    its end moves ``state.epoch`` (when the state has one) on to the next epoch instead."""

    def __init__(self, state):
        super().__init__()
        self.state = state
        self._offset = 0
        self._realign = False

    def on_train_begin(self, logs=None):
        steps = self.params.get("steps")
        if steps and self.state.batch >= steps:
            self.state.batch = 0
            if hasattr(self.state, "epoch"):
                self.state.epoch += 1
            raise EpochRealigned()

    def on_epoch_begin(self, epoch, logs=None):
        self._offset = self.state.batch

    def on_train_batch_end(self, batch, logs=None):
        self.state.batch = self._offset + batch + 1
        steps = self.params.get("steps")
        if self._offset and steps and self.state.batch >= steps:
            self.model.stop_training = True
            self._realign = True

    def on_epoch_end(self, epoch, logs=None):
        self.state.batch = 0
        self._offset = 0

    def on_train_end(self, logs=None):
        if self._realign:
            self._realign = False
            raise EpochRealigned()


class UpdateEpochStateCallback(_Callback):
    """Keeps ``state.epoch`` at the number of epochs done, counting those of earlier
    generations: give ``fit`` ``epochs=total - state.epoch``."""

    def __init__(self, state):
        super().__init__()
        self.state = state
        self._initial = state.epoch

    def on_train_begin(self, logs=None):
        self._initial = self.state.epoch

    def on_epoch_end(self, epoch, logs=None):
        self.state.epoch = self._initial + epoch + 1
