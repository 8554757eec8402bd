"""A stand-in for the C++ compiler in tests of how the op library's build is triggered, announced
and cached: it writes the library that the session already compiled for real (the path in
$MPIREP_TEST_BUILT_LIBRARY) to the command's ``-o`` output, so those tests spend no half
minute compiling it again. Usage, as CXX: ``python copying_compiler.py <compiler arguments>``."""

import os
import shutil
import sys

arguments = sys.argv[1:]
shutil.copyfile(os.environ["MPIREP_TEST_BUILT_LIBRARY"], arguments[arguments.index("-o") + 1])
