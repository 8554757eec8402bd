"""A job's first TensorFlow collective, through the op library (MPIREP_TF_BRIDGE=native): with an
empty MPIREP_CACHE_DIR one rank compiles the library, saying so, while the others wait for it.
Run under mpirun at any number of ranks."""

import numpy as np
import tensorflow as tf

import mpirep.tensorflow as hvd
from harness import check, run

hvd.init()
R, N = hvd.rank(), hvd.size()


@check
def allreduce_through_the_op_library():
    got = hvd.allreduce(tf.constant(np.arange(5.0) * (R + 1)), op=hvd.Sum)
    np.testing.assert_array_equal(got.numpy(), np.arange(5.0) * N * (N + 1) / 2)


run(hvd)
