"""Allreduces through shared memory for tests/multiproc/test_shm_allreduce.py; the ranks are all
on this host. argv[1] is the mode, argv[2] a folder for what the test reads:

  values  every dtype and op at sizes 0, 1, odd and several 1 MiB slots long, scale factors,
          a fused group, a process set of two ranks from 3 ranks on; values are closed forms of rank and index,
          and every rank must get the same bytes. Rank 0 records a timeline of it (shm.json).
          The job starts again with 4 KiB slots, so that odd sizes and the fused group span
          several, and checks the same at sizes up to 5000 elements; then with shm_allreduce off,
          and rank 0 records one allreduce (ring.json). Prints "shm values ok" per rank.
  killed  64 MiB allreduces in a loop; rank 1 kills itself with SIGKILL while one is under
          way. Each rank writes its pid to pid.<rank> first.
"""
import hashlib
import os
import signal
import sys
import threading
from pathlib import Path

import numpy as np
from mpi4py import MPI

import mpirep

mode, folder = sys.argv[1], Path(sys.argv[2])
DTYPES = (np.uint8, np.int8, np.int16, np.int32, np.int64, np.float16, np.float32, np.float64)


def factor(count):
    return np.arange(count) % 7 + 1


def check_values(rank, size, counts):
    triangle = size * (size + 1) // 2
    digests = []

    def reduced(x, expected, what, **kwargs):
        y = mpirep.allreduce(x, name=what, **kwargs)
        assert y.dtype == x.dtype and y.shape == x.shape, what
        assert np.array_equal(y, expected.astype(x.dtype)), f"rank {rank}: {what}: {y[:8]} != {expected[:8]}"
        digests.append(hashlib.sha256(y.tobytes()).hexdigest())

    for dtype in DTYPES:
        for count in counts(dtype):
            k = factor(count)
            x = ((rank + 1) * k).astype(dtype)
            what = f"{np.dtype(dtype).name}/{count}"
            reduced(x, k * triangle, "sum/" + what, op=mpirep.Sum)
            reduced(x, k, "min/" + what, op=mpirep.Min)
            reduced(x, k * size, "max/" + what, op=mpirep.Max)
            if not (dtype == np.float16 and size > 3):  # 7**4 * 4! is past float16's exact integers
                factorial = np.prod(np.arange(1, size + 1))
                reduced(x, k.astype(np.int64) ** size * factorial, "product/" + what, op=mpirep.Product)
            # integers take the floor; floats are exact (halves and quarters, or multiples of 3)
            divide = np.true_divide if np.dtype(dtype).kind == "f" else np.floor_divide
            reduced(x, divide(k * triangle, size), "average/" + what, op=mpirep.Average)
            # the prescaled sum must fit: int8's wraps from 4 ranks on, before it is scaled back
            if np.dtype(dtype).kind == "f" or np.iinfo(dtype).max >= 2 * 7 * triangle:
                reduced(x, divide(k * triangle * 2, 4), "scaled/" + what, op=mpirep.Sum, prescale_factor=2.0,
                        postscale_factor=0.25)
    group_counts = (1, 5, 13, 31, 600, 2000)
    group = mpirep.grouped_allreduce([((rank + 1) * factor(c)).astype(np.float32) for c in group_counts],
                                     op=mpirep.Sum, name="group")
    for c, y in zip(group_counts, group):
        assert np.array_equal(y, (factor(c) * triangle).astype(np.float32)), f"rank {rank}: group member {c}"
        digests.append(hashlib.sha256(y.tobytes()).hexdigest())
    if size >= 3:
        pair = mpirep.add_process_set([0, 2])
        if rank in (0, 2):
            x = ((rank + 1) * factor(100003)).astype(np.float64)
            y = mpirep.allreduce(x, op=mpirep.Sum, name="pair", process_set=pair)
            assert np.array_equal(y, factor(100003) * 4.0), f"rank {rank}: process set"
        mpirep.remove_process_set(pair)
    every = MPI.COMM_WORLD.allgather(digests)
    assert all(d == every[0] for d in every), f"rank {rank}: results differ between ranks"


def values():
    mpirep.init()
    rank, size = mpirep.rank(), mpirep.size()
    mpirep.start_timeline(str(folder / "shm.json"))
    check_values(rank, size, lambda dtype: (0, 1, 7, 1001, (3 << 20) // np.dtype(dtype).itemsize + 5))
    mpirep.stop_timeline()
    mpirep.shutdown()
    mpirep.init(shm_slot_bytes=4096)
    check_values(rank, size, lambda dtype: (7, 1001, 5000))
    mpirep.shutdown()
    mpirep.init(shm_allreduce=False)
    mpirep.start_timeline(str(folder / "ring.json"))
    y = mpirep.allreduce(np.full(100000, rank + 1, np.int32), op=mpirep.Sum, name="ring")  # past doubling
    assert (y == size * (size + 1) // 2).all(), f"rank {rank}: ring"
    mpirep.stop_timeline()
    print(f"rank {rank}: shm values ok", flush=True)


def killed():
    mpirep.init()
    rank = mpirep.rank()
    (folder / f"pid.{rank}").write_text(str(os.getpid()))
    x = np.full(16 << 20, rank + 1, np.float32)
    y = mpirep.allreduce(x, op=mpirep.Sum, name="warm-up")
    assert (y == 6).all()
    if rank == 1:  # a moment into the next allreduce, which takes tens of ms at least
        threading.Timer(0.005, os.kill, (os.getpid(), signal.SIGKILL)).start()
    for step in range(1000):
        mpirep.allreduce(x, op=mpirep.Sum, name=f"step/{step}")
    raise AssertionError(f"rank {rank}: the allreduces went on without rank 1")


{"values": values, "killed": killed}[mode]()
