"""mpirep's exceptions as the tf.errors a Horovod user catches."""

import tensorflow as tf

from mpirep import errors


def to_tf_error(error):
    """The tf.errors.OpError for an mpirep error; a mismatch between ranks is a failed
    precondition on every rank, as in Horovod."""
    message = str(error)
    if isinstance(error, errors.MismatchError):
        return tf.errors.FailedPreconditionError(None, None, message)
    if isinstance(error, errors.NotInitializedError):
        return tf.errors.FailedPreconditionError(None, None, message)
    if isinstance(error, errors.InvalidArgumentError):
        return tf.errors.InvalidArgumentError(None, None, message)
    if isinstance(error, errors.UnsupportedError):
        return tf.errors.UnimplementedError(None, None, message)
    if isinstance(error, errors.StallError):
        return tf.errors.DeadlineExceededError(None, None, message)
    if isinstance(error, errors.ShutdownError):
        return tf.errors.AbortedError(None, None, message)
    return tf.errors.InternalError(None, None, message)
