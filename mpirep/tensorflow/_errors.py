"""mpirep's exceptions as the tf.errors a Horovod user catches: each status of the core becomes
the canonical error code that the core's status table gives it (common.h), the same table the
TensorFlow op library reports through; e.g. a mismatch between ranks is a failed precondition
on every rank, as in Horovod."""

import tensorflow as tf

from mpirep import errors
from mpirep._native import core


def to_tf_error(error):
    """The tf.errors.OpError for an mpirep error."""
    code = core().CANONICAL_ERROR_CODES[errors.status_name(error)]  # e.g. FAILED_PRECONDITION
    error_class = getattr(tf.errors, "".join(word.capitalize() for word in code.split("_")) + "Error")
    return error_class(None, None, str(error))
