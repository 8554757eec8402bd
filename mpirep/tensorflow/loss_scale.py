"""The loss-scale optimizer of mixed precision (what ``mixed_float16`` compiles an optimizer
into) around a DistributedOptimizer or ZeroRedundancyOptimizer: it decides from the gradients it
is given whether they are finite, and applies them or skips the step. Those are each rank's
own gradients wherever the reduction happens inside the wrapped optimizer (Keras 3's ``fit``,
ZeRO, custom loops), so a rank whose gradients overflowed would skip a step that the others
take; its next gradients would then be reduced with the others' current ones, and the ranks
would hang or part. Here the ranks of the inner optimizer's process set agree: the step is
applied on every rank or skipped on every rank."""

import importlib
import threading

import tensorflow as tf

import mpirep

_installed = []


def agree_on_skipped_steps():
    """Makes the loss-scale optimizers of Keras 3 and of Keras 2 (tf_keras) agree across ranks
    when they wrap an mpirep optimizer; once per process."""
    if _installed:
        return
    _installed.append(True)
    _install_keras3()
    _install_keras2()


def _process_set_of(optimizer):
    """The process set whose ranks a wrapped optimizer reduces gradients over, or None."""
    zero = getattr(optimizer, "_mpirep_zero", None)
    if zero is not None:
        return zero.process_set
    state = getattr(optimizer, "_mpirep", None)
    return state.reducer.process_set if state is not None else None


def _agreed(finite, process_set):
    """``finite`` on every rank of ``process_set`` where it is true on all of them."""
    if process_set is None or process_set.size() < 2 or not process_set.included():
        return finite
    from mpirep.tensorflow.mpi_ops import allreduce

    everywhere = allreduce(tf.cast(finite, tf.int32), op=mpirep.Min, process_set=process_set,
                           name="mpirep.loss_scale.all_finite")
    return tf.cast(everywhere, tf.bool)


def _install_keras3():
    try:
        import keras
    except ImportError:
        return
    if int(keras.__version__.split(".")[0]) < 3:
        return
    optimizer_class = keras.optimizers.LossScaleOptimizer
    local_check = optimizer_class.check_finite

    def check_finite(self, grads):
        return _agreed(local_check(self, grads), _process_set_of(self.inner_optimizer))

    optimizer_class.check_finite = check_finite


# Where Keras 2's loss-scale optimizer lives: in tf_keras, and in the keras package of
# TensorFlow < 2.16 (keras.src from Keras 2.13).
_KERAS2_MODULES = ("tf_keras.src.mixed_precision.loss_scale_optimizer",
                   "keras.src.mixed_precision.loss_scale_optimizer",
                   "keras.mixed_precision.loss_scale_optimizer")


def _install_keras2():
    for name in _KERAS2_MODULES:
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        if hasattr(module, "_is_all_finite") and hasattr(module, "LossScaleOptimizerV3"):
            _install_keras2_module(module)


def _install_keras2_module(module):
    """Keras 2 checks finiteness in a module function that does not see the optimizer: the
    optimizer's apply_gradients says which process set, for the check made inside it."""
    local_check = module._is_all_finite
    applying = threading.local()

    def is_all_finite(grads):
        return _agreed(local_check(grads), getattr(applying, "process_set", None))

    for optimizer_class in (module.LossScaleOptimizer, module.LossScaleOptimizerV3):
        optimizer_class.apply_gradients = _telling(optimizer_class.apply_gradients, applying)
    module._is_all_finite = is_all_finite


def _telling(apply_gradients, applying):
    def telling_apply_gradients(self, *args, **kwargs):
        applying.process_set = _process_set_of(self.inner_optimizer)
        try:
            return apply_gradients(self, *args, **kwargs)
        finally:
            applying.process_set = None

    return telling_apply_gradients
