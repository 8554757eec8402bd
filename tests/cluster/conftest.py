"""Cluster tests need daemons that tests/cluster/run.sh starts; each group is skipped when
its part is not up:
  marker slurm1: MPIREP_SLURM_CONF, slurm.conf of the single-node cluster
  marker netns:  MPIREP_NETNS_UP=1, the emulated hosts h1 and h2 are up
  marker slurm2: MPIREP_SLURM2_CONF, slurm.conf of the 2-node cluster on h1 and h2
Tests without a marker need only Open MPI's mpirun on this machine.
"""
import os

import pytest

GROUPS = {
    "slurm1": ("MPIREP_SLURM_CONF", "the single-node Slurm cluster"),
    "netns": ("MPIREP_NETNS_UP", "the emulated hosts h1 and h2"),
    "slurm2": ("MPIREP_SLURM2_CONF", "the 2-node Slurm cluster on h1 and h2"),
}


def _is_up(variable):
    return os.environ.get(variable, "0") not in ("", "0")


def pytest_configure(config):
    for name, (_, what) in GROUPS.items():
        config.addinivalue_line("markers", f"{name}: needs {what}")


def pytest_collection_modifyitems(config, items):
    for item in items:
        for name, (variable, what) in GROUPS.items():
            if item.get_closest_marker(name) and not _is_up(variable):
                item.add_marker(pytest.mark.skip(reason=f"{what} not up ({variable})"))
