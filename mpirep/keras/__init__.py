"""``horovod.keras`` for scripts that use Keras directly. Keras 3 and tf_keras run on
TensorFlow, so every name here is ``mpirep.tensorflow.keras``'s: ``import mpirep.keras as hvd``
(was ``import horovod.keras as hvd``)."""

from mpirep.tensorflow import keras as _tf_keras


def __getattr__(name):
    return getattr(_tf_keras, name)


def __dir__():
    return dir(_tf_keras)
