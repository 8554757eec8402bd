"""Build the TensorFlow op library ahead of a job, for example on a login node into a cache
directory that compute nodes without a compiler share (docs/tensorflow.md):

    MPIREP_CACHE_DIR=/shared/mpirep-cache python -m mpirep.tensorflow.build

Prints the library's path; exits 1 with the compiler's output if it cannot be built. Then builds
the XLA kernels, which are optional (docs/tensorflow.md, "XLA and GPU nodes"): where they cannot
be built, it says so on stderr, and the exit status stays 0. Needs
neither MPI nor mpirep's native core. `mpirep-run --check-build --build-tf-ops` does the same.
"""

import argparse
import sys

import tensorflow as tf

from mpirep.tensorflow import _op_library


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m mpirep.tensorflow.build",
                                     description="Build the TensorFlow op library into mpirep's "
                                                 "cache (MPIREP_CACHE_DIR) and print its path.")
    parser.parse_args(argv)
    try:
        print(_op_library.library_path())
    except _op_library.BuildError as error:
        print(f"mpirep: the TensorFlow op library for TensorFlow {tf.__version__} could not be "
              f"built:\n{error}", file=sys.stderr)
        return 1
    try:
        _op_library.library_path(_op_library.XLA)
    except _op_library.BuildError as error:
        print(f"mpirep: no XLA kernels for TensorFlow {tf.__version__}; jit-compiled functions "
              f"cannot hold mpirep's collectives:\n{error}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
