import pytest

from installs import copy_checkout


@pytest.fixture(scope="session")
def checkout(tmp_path_factory):
    """One copy of this checkout for every install test: builds in it reuse the objects of an
    earlier build against the same MPI (and must never reuse those of another)."""
    return copy_checkout(tmp_path_factory.mktemp("checkout"))
