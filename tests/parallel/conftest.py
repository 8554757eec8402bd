"""Runs on every rank: registers the cross-rank verdict and keeps mpirep initialised.

Only rank 0 prints pytest's report; the verdict plugin copies the other ranks' failures into it.
"""
import os

import pytest
from mpi4py import MPI

import mpirep
from verdict import RankVerdict, deadline_from_env


@pytest.hookimpl(trylast=True)  # after pytest has registered its terminal reporter
def pytest_configure(config):
    comm = MPI.COMM_WORLD.Dup()
    config.pluginmanager.register(
        RankVerdict(comm, deadline_from_env(), os.environ.get("MPIREP_TEST_REPORT_DIR")),
        "mpirep-rank-verdict")
    if comm.rank != 0:
        config.pluginmanager.unregister(name="terminalreporter")


@pytest.fixture(scope="session", autouse=True)
def runtime():
    mpirep.init()
    yield
    mpirep.shutdown()
