"""A stand-in for the C++ compiler in tests of how the op library's build is triggered, announced
and cached: it writes the library that the session already compiled for real (the path in
$MPIREP_TEST_BUILT_LIBRARY) to the command's ``-o`` output, so those tests spend no half
minute compiling it again. The XLA kernels it fails to build. Usage, as CXX: ``python copying_compiler.py <compiler arguments>``."""

import os
import shutil
import sys

arguments = sys.argv[1:]
if any(argument.endswith("mpirep_tf_xla.cc") for argument in arguments):
    sys.exit("copying_compiler: it has no XLA kernels to copy")  # a failed build: they are optional
shutil.copyfile(os.environ["MPIREP_TEST_BUILT_LIBRARY"], arguments[arguments.index("-o") + 1])
