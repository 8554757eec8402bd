"""Cross-rank checks that the tests make through mpi4py, beside mpirep's own communicator."""
import functools
import hashlib

import numpy as np
from mpi4py import MPI


@functools.lru_cache(maxsize=None)
def check_comm():
    return MPI.COMM_WORLD.Dup()


def add_to_digest(h, array):
    array = np.ascontiguousarray(array)
    h.update(f"{array.dtype.str}{array.shape}".encode())
    h.update(array.tobytes())


def assert_same_digest_across_ranks(h):
    """h: a hashlib object fed, in the same order on every rank, what every rank must hold."""
    digests = check_comm().allgather(h.hexdigest())
    differing = [r for r, d in enumerate(digests) if d != digests[0]]
    assert not differing, f"results on rank(s) {differing} differ from rank 0"


def assert_identical_across_ranks(arrays):
    """Results every rank must hold bit for bit; compared by hash."""
    h = hashlib.sha256()
    for array in arrays:
        add_to_digest(h, array)
    assert_same_digest_across_ranks(h)
