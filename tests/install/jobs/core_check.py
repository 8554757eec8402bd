"""The core check of an installation: collectives through mpirep's native core, with inputs that
depend on rank and index and closed-form results; then each rank prints one line naming the MPI
its core uses, which the tests match against the MPI they installed."""
import os

import numpy as np

import mpirep
from mpirep import _core_loader

mpirep.init()
n, rank = mpirep.size(), mpirep.rank()
index = np.arange(5, dtype=np.float64)

summed = mpirep.allreduce(index * (rank + 1), op=mpirep.Sum, name="sum")
np.testing.assert_array_equal(summed, index * n * (n + 1) / 2)
largest = mpirep.allreduce(index + rank, op=mpirep.Max, name="max")
np.testing.assert_array_equal(largest, index + n - 1)
gathered = mpirep.allgather(np.full((rank + 1, 2), rank, dtype=np.int32) + [0, 10],
                            name="gather")
owners = np.repeat(np.arange(n, dtype=np.int32), np.arange(1, n + 1))
np.testing.assert_array_equal(gathered, np.stack([owners, owners + 10], axis=1))
sent = mpirep.broadcast(index * 7 + rank, root_rank=n - 1, name="bcast")
np.testing.assert_array_equal(sent, index * 7 + n - 1)
mpirep.shutdown()
# one write, so that the launcher does not interleave ranks' lines
os.write(1, f"core check passed: rank {rank} of {n}, {_core_loader.core_mpi()}\n".encode())
