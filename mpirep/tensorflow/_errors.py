"""mpirep's exceptions as the tf.errors a Horovod user catches: each status of the core becomes
the canonical error code that the core's status table gives it (common.h), the same table the
TensorFlow op library reports through; e.g. a mismatch between ranks is a failed precondition
on every rank, as in Horovod."""

import re

import tensorflow as tf

from mpirep import errors
from mpirep._core_loader import core


def to_tf_error(error):
    """The tf.errors.OpError for an mpirep error."""
    code = core().CANONICAL_ERROR_CODES[errors.status_name(error)]  # e.g. FAILED_PRECONDITION
    error_class = getattr(tf.errors, "".join(word.capitalize() for word in code.split("_")) + "Error")
    return error_class(None, None, str(error))


# What TensorFlow wraps around an op's error when it runs eagerly: a "{{function_node
# __wrapped__MpirepCollective_device_...}}" prefix, and an "[Op:MpirepCollective]" suffix with,
# in newer TensorFlow, " name: " and the op's (empty) name.
_EAGER_PREFIX = re.compile(r"^\{\{function_node [^}]*\}\}\s*")
_EAGER_SUFFIX = re.compile(r"\s*\[Op:[^\]]*\](?: name: .*)?$", re.S)


def without_eager_wrapping(error):
    """The same tf.errors class as ``error``, whose message is the op's own: what the user
    reads first is what went wrong."""
    message = _EAGER_SUFFIX.sub("", _EAGER_PREFIX.sub("", error.message))
    return type(error)(None, None, message)
