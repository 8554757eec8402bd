"""Runs on every rank: the cross-rank verdict (see verdict.py) and mpirep kept initialised."""
import pytest

import mpirep
from verdict import pytest_configure  # noqa: F401  (registers the verdict plugin)


@pytest.fixture(scope="session", autouse=True)
def runtime():
    mpirep.init()
    yield
    mpirep.shutdown()


@pytest.fixture
def even_ranks():
    """A process set of the even ranks, and its members; removed afterwards."""
    members = list(range(0, mpirep.size(), 2))
    process_set = mpirep.add_process_set(members)
    yield process_set, members
    mpirep.remove_process_set(process_set)
