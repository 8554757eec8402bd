"""Small helpers that Horovod scripts reach through ``hvd.util``."""

import tensorflow as tf


def _executing_eagerly():
    """Whether ops run eagerly here (False inside tf.function and tf.compat.v1 graphs). Kept
    under Horovod's private name, which scripts and Horovod's tests call."""
    return tf.executing_eagerly()
