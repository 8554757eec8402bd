"""Collectives on a buffer of more than 2 GiB, past where MPI's int counts end: the core cuts
every message to at most 1 GiB. Values depend on rank and index; prints "large buffers ok"."""
import numpy as np

import mpirep

COUNT = (1 << 31) + 65  # uint8 elements: 2 GiB + 65 bytes

mpirep.init()
rank, size = mpirep.rank(), mpirep.size()
x = np.full(COUNT, rank + 1, np.uint8)
tail = np.arange(7, dtype=np.uint8)
x[-7:] = tail * (rank + 1)
triangle = size * (size + 1) // 2

y = mpirep.allreduce(x, op=mpirep.Sum)
assert y.shape == (COUNT,)
assert (y[:-7] == triangle).all(), f"rank {rank}: allreduce body wrong"
assert (y[-7:] == tail * triangle).all(), f"rank {rank}: allreduce tail wrong: {y[-7:]}"
del y

z = mpirep.broadcast(x, root_rank=size - 1)
assert (z[:-7] == size).all(), f"rank {rank}: broadcast body wrong"
assert (z[-7:] == tail * size).all(), f"rank {rank}: broadcast tail wrong"
print(f"rank {rank}: large buffers ok", flush=True)
