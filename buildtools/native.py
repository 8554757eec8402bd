"""What native/ holds and how its parts are compiled: the one list of layers, sources and flags
shared by every build of native code in this repository.

  native/core      MPI-free: compiled on its own, without any MPI include directory or flag,
                   into a static library (the extension links it) and into the C++ unit tests
                   (linked without libmpi). An MPI include or call in core/ breaks both builds.
  native/runtime   the MPI runtime, compiled into the extension with MPI's flags
  native/bindings  the C API and the Python module (the extension); bindings/tensorflow is
                   compiled at first use by the installed package against the TensorFlow it
                   finds (mpirep/tensorflow/_op_library.py), not here
  native/tests     C++ unit tests of core/ (buildtools/core_tests.py)

Folders are globbed, never listed file by file. Paths are relative to the checkout's root, as
setuptools wants them.
"""

import glob
import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NATIVE = "native"
CXX_FLAGS = ["-std=c++17"]
# Every layer includes across layers by path from native/ ("core/ring.h"); core/ itself
# needs no include directory, so nothing outside it can be reached from there.
INCLUDE_DIR = NATIVE
CORE_LIBRARY = "mpirep_core"


def _glob(*parts, recursive=False):
    found = glob.glob(os.path.join(ROOT, NATIVE, *parts), recursive=recursive)
    return sorted(os.path.relpath(path, ROOT) for path in found)


def sources(layer):
    """The .cc files of one folder of native/ (core, runtime, bindings, tests)."""
    return _glob(layer, "*.cc")


def headers():
    """Every header and table under native/, for deciding what to recompile."""
    return _glob("**", "*.h", recursive=True) + _glob("**", "*.def", recursive=True)
