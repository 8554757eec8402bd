"""Elastic training for TensorFlow, with the names of ``horovod.tensorflow.elastic``: states of
tf.Variables and of Keras models, over the framework-free part in mpirep/elastic (``run``,
commits), which this module re-exports (docs/elastic.md has the map of every layer)."""

import numpy as np
import tensorflow as tf

import mpirep
from mpirep.elastic import (  # noqa: F401  (the framework-free part of the interface)
    HorovodInternalError,
    HostsChangedInterrupt,
    HostsUpdatedInterrupt,
    ObjectState,
    RanksLostError,
    State,
    run,
)
from mpirep.tensorflow._trackables import build_optimizer, tracked_variables, zero_optimizer
from mpirep.tensorflow.functions import broadcast_variables

__all__ = ["HorovodInternalError", "HostsChangedInterrupt", "HostsUpdatedInterrupt",
           "ObjectState", "RanksLostError", "State", "TensorFlowKerasState", "TensorFlowState",
           "run"]

# What the core broadcasts natively; other variables (e.g. uint32 random-generator states)
# travel as their bytes.
_NATIVE = frozenset([tf.uint8, tf.int8, tf.uint16, tf.int16, tf.int32, tf.int64, tf.float16,
                     tf.bfloat16, tf.float32, tf.float64, tf.bool])


def _view(variable):
    """The variable's value as a numpy array without a copy (on CPU): a committed snapshot is
    copied out before the next step writes the variable, and TF copies on write meanwhile."""
    return np.asarray(tf.convert_to_tensor(variable))


def _dtype(variable):
    """Keras 3 variables give their dtype as a string."""
    return tf.as_dtype(variable.dtype).base_dtype


def _broadcast_bytes_of(variables):
    for index, variable in enumerate(variables):
        raw = np.ascontiguousarray(_view(variable)).view(np.uint8)
        got = mpirep.broadcast(raw, 0, name=f"elastic.variable_bytes.{index}")
        variable.assign(got.view(_dtype(variable).as_numpy_dtype).reshape(variable.shape))


class _VariablesState(ObjectState):
    """A state of TF variables (``_tracked()``) and attributes."""

    def _tracked(self):
        raise NotImplementedError

    def snapshot(self):
        _, objects = super().snapshot()
        return [(name, _view(v)) for name, v in self._named()], objects

    def _named(self):
        return [(f"variable.{i}:{v.name}", v) for i, v in enumerate(self._tracked())]

    def load_snapshot(self, arrays, objects):
        named = self._named()
        if len(arrays) != len(named):
            raise ValueError(f"the committed state has {len(arrays)} variables, this one "
                             f"{len(named)}: was the model or optimizer changed?")
        for (name, variable), array in zip(named, arrays):
            if tuple(array.shape) != tuple(variable.shape):
                raise ValueError(f"{name}: committed shape {tuple(array.shape)}, now "
                                 f"{tuple(variable.shape)}")
            variable.assign(array)
        super().load_snapshot(arrays, objects)

    def sync(self):
        variables = self._tracked()
        broadcast_variables([v for v in variables if _dtype(v) in _NATIVE], 0)
        _broadcast_bytes_of([v for v in variables if _dtype(v) not in _NATIVE])
        super().sync()


class TensorFlowState(_VariablesState):
    """A list of tf.Variables and attributes: ``TensorFlowState(variables, step=0)``.
    ``session`` is Horovod's argument for TF1 graphs, which elastic mpirep does not support."""

    def __init__(self, variables=None, session=None, **kwargs):
        if variables is None:
            raise ValueError("TensorFlowState needs the variables to keep (TF 2 has no global "
                             "variables collection)")
        self.variables = list(variables)
        super().__init__(**kwargs)

    def _tracked(self):
        return self.variables


class TensorFlowKerasState(_VariablesState):
    """A Keras model, its optimizer (``model.optimizer`` when not given) and attributes:
    ``TensorFlowKerasState(model, epoch=0, batch=0)``.  The optimizer is built here, so that
    its slots exist before training.  ``backend`` is Horovod's argument, not needed here."""

    def __init__(self, model, optimizer=None, backend=None, **kwargs):
        if not model.built:
            raise ValueError("the model must be built first: call model.build(input_shape) "
                             "or run it on a batch")
        self.model = model
        self.optimizer = optimizer if optimizer is not None else getattr(model, "optimizer", None)
        if zero_optimizer(self.optimizer) is not None:
            # Its shards are planned for the ranks it was built on, which a reset changes.
            raise ValueError(f"rank {mpirep.rank()}: elastic states cannot hold a "
                             "ZeroRedundancyOptimizer; use DistributedOptimizer for elastic "
                             "training (docs/zero.md)")
        if self.optimizer is not None:
            build_optimizer(self.optimizer, model.trainable_variables)
        super().__init__(**kwargs)

    def _tracked(self):
        optimizers = [self.optimizer] if self.optimizer is not None else []
        return tracked_variables([self.model] + optimizers)
