"""Runs on every rank: the cross-rank verdict (see verdict.py) and mpirep kept initialised."""
import pytest

import mpirep
from verdict import pytest_configure  # noqa: F401  (registers the verdict plugin)


@pytest.fixture(scope="session", autouse=True)
def runtime():
    mpirep.init()
    yield
    mpirep.shutdown()
