"""Rank 1 of 3 does not bring the tensor 'late_tensor' when the others do; argv[1] says how,
and argv[2] is "new" or "cached" (then every rank first reduces 'late_tensor' twice, so that the
others' next one is a response cache hit, whose stall rank 0 must still report and cancel):

  warn      it comes argv[3] seconds late; the stall inspector (1 s) warns, the job completes
  renamed   it names the tensor 'late_tensor_renamed' instead; the stall shutdown (3 s) cancels
            both tensors, every rank catches the same StallError, and the next allreduces work,
            also under either name: each side waited for the other, so neither is late for the
            other's tensor (docs/core.md)
  late      it comes only once the others have had their StallError from the stall shutdown
            (3 s) and tell it so; they try 'late_tensor' again; it gets the same error when it
            comes, and its next 'late_tensor' pairs with the others' second one
  never     it sleeps for 600 s; the others' StallError, uncaught, ends the job
"""
import sys
import time

import numpy as np
from mpi4py import MPI

import mpirep

mode = sys.argv[1]
CANCELLED_TAG = 5
mpirep.init(stall_check_time_seconds=1, stall_shutdown_time_seconds=0 if mode == "warn" else 3)
n, rank = mpirep.size(), mpirep.rank()
expected = np.full(3, n * (n + 1) / 2)


def reduce(name):
    return mpirep.allreduce(np.full(3, rank + 1.0), op=mpirep.Sum, name=name)


if sys.argv[2] == "cached":
    for _ in range(2):
        np.testing.assert_array_equal(reduce("late_tensor"), expected)

if mode == "warn":
    if rank == 1:
        time.sleep(float(sys.argv[3]))
    np.testing.assert_array_equal(reduce("late_tensor"), expected)
elif mode == "never":
    if rank == 1:
        time.sleep(600)
    reduce("late_tensor")
else:
    if rank == 1 and mode == "late":
        told = [MPI.COMM_WORLD.irecv(source=r, tag=CANCELLED_TAG) for r in range(n) if r != 1]
        while not all(t.test()[0] for t in told):  # polls gently; a blocking receive spins a core
            time.sleep(0.01)
    name = "late_tensor_renamed" if rank == 1 and mode == "renamed" else "late_tensor"
    try:
        reduce(name)
        raise AssertionError(f"rank {rank}: no StallError")
    except mpirep.StallError as error:
        message = str(error)
    if mode == "late" and rank != 1:
        MPI.COMM_WORLD.send(None, dest=1, tag=CANCELLED_TAG)
    messages = MPI.COMM_WORLD.allgather(message)
    assert all(m == messages[0] for m in messages), messages
    assert "missing rank 1" in message, message
    for name in ["late_tensor"] + (["late_tensor_renamed"] if mode == "renamed" else []):
        np.testing.assert_array_equal(reduce(name), expected)
    print(f"rank {rank}: the same StallError as every rank, then a correct allreduce", flush=True)
mpirep.shutdown()
