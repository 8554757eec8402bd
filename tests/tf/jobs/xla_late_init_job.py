"""A function compiled with XLA before hvd.init(): tf2xla has taken in its kernels by then, without
mpirep's, so a jitted collective afterwards must say why and name the fix, not fail in XLA."""

import tensorflow as tf

tf.function(lambda x: x * 2.0, jit_compile=True)(tf.ones(2))  # before mpirep is imported

import os  # noqa: E402

import mpirep.tensorflow as hvd  # noqa: E402
from harness import check, run  # noqa: E402

hvd.init()
# Where TensorFlow's headers lack XLA's FFI (2.12) the kernels are not built at all.
FFI = os.path.isfile(os.path.join(tf.sysconfig.get_include(), "xla", "ffi", "api", "ffi.h"))


@check
def a_collective_compiled_after_tensorflow_took_in_its_kernels_names_the_fix():
    try:
        tf.function(lambda x: hvd.allreduce(x), jit_compile=True)(tf.ones(2))
    except hvd.XlaCollectiveError as error:
        message = str(error)
        assert ("before mpirep's XLA kernels were loaded" if FFI else "could not be built") \
            in message, message
        assert "jit_compile=False" in message, message
    else:
        raise AssertionError("no XlaCollectiveError")


run(hvd)
