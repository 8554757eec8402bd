"""Build mpirep: the Python package and its C++ core, the extension mpirep._core.

Static metadata lives in pyproject.toml; this file adds what depends on the machine: the MPI
that the core is compiled against (buildtools/mpi.py) and, when that MPI came from a PyPI
wheel, that wheel as a run-time dependency. Which native sources go where, and with which
flags: buildtools/native.py.
"""

import os
import sys

from setuptools import Extension, find_packages, setup

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from buildtools.build_ext import BuildExt  # noqa: E402
from buildtools.mpi import runtime_requirement  # noqa: E402
from buildtools.native import CXX_FLAGS, INCLUDE_DIR, headers, sources  # noqa: E402

RUNTIME_REQUIREMENTS = ["numpy", "mpi4py", "ml_dtypes"]

# The runtime and the bindings; native/core is compiled separately, without MPI, and linked
# in as a static library (buildtools/build_ext.py).
core = Extension(
    "mpirep._core",
    sources=sources("runtime") + sources("bindings"),
    include_dirs=[INCLUDE_DIR],
    depends=headers(),
    language="c++",
    # mpi.h pulls in the MPI C++ bindings when compiled as C++ unless told not to
    define_macros=[("OMPI_SKIP_MPICXX", "1"), ("MPICH_SKIP_MPICXX", "1")],
    # only PyInit__core is exported; no debug information, for a small extension
    extra_compile_args=CXX_FLAGS + ["-fvisibility=hidden", "-g0", "-O3"],
)

mpi_requirement = runtime_requirement()

setup(
    # The launcher lives at the top of the checkout and is installed inside the package.
    # mpirep._native_copy carries the sources the TensorFlow op library is compiled from on first
    # use (mpirep/tensorflow/_op_library.py); a source tree uses native/ directly.
    packages=find_packages(include=["mpirep", "mpirep.*"])
    + ["mpirep.launch", "mpirep.launch.elastic", "mpirep._native_copy"],
    package_dir={"mpirep.launch": "launch", "mpirep._native_copy": "native"},
    package_data={"mpirep.launch": ["slurm/*.sbatch"],
                  "mpirep._native_copy": ["core/*.h", "core/*.def", "bindings/*.h",
                                         "bindings/tensorflow/*.cc", "bindings/tensorflow/*.h"]},
    include_package_data=False,  # only the files above; MANIFEST.in lists the sdist's sources
    ext_modules=[core],
    cmdclass={"build_ext": BuildExt},
    install_requires=RUNTIME_REQUIREMENTS + ([mpi_requirement] if mpi_requirement else []),
)
