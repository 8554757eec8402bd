"""Collectives for tests/multiproc/test_timeline.py to find in rank 0's timeline. argv[1] says how
the timeline is recorded, argv[2] is the folder the timelines go to:

  from_init  MPIREP_TIMELINE (set by the driver) records from init on; two steps
  runtime    start_timeline(argv[2]/runtime.json, mark_cycles=argv[3] == "1") after a step that
             must not be recorded, two steps, stop_timeline, a step that must not be recorded;
             then a second file, argv[2]/second.json, with one allreduce; and the errors of
             start_timeline
  crash      MPIREP_TIMELINE records one step; once the file holds it, rank 0 kills itself
  bad_path   MPIREP_TIMELINE names a file rank 0 cannot create: init fails on every rank

A step: every rank submits four small allreduces and a large one, asynchronously; the last rank
does so only once every other rank has told it (through mpi4py, on a communicator of the job's
own) that its submissions have reached the core's rounds. By then rank 0 has the other ranks'
requests (or, for a repeat that runs from the response cache, every other rank has its hits in
the rounds' agreement), so the last rank is the one the timeline names, and a cycle time longer
than the job holds the small ones until all are ready, so that they fuse into one ring pass.
"""
import json
import os
import signal
import sys
import time
from pathlib import Path

import numpy as np
from mpi4py import MPI

import mpirep
from mpirep._core_loader import core

SMALL = 4
LARGE_ELEMENTS = 32768  # 256 KiB of float64: small_allreduce_bytes (64 KiB) x 4 ranks, so it runs alone
CHUNK_BYTES = 4096
STEP_TAG = 7


def rounds_taken():
    return core().negotiation_stats()["rounds"]


def tell_the_last_rank(comm, seen):
    """Tells the last rank once this rank's submissions have reached the rounds. `seen`: the
    round count read after submitting. The background thread publishes its count during a round
    (after the agreement) and again at its end; the round that took the submissions is at the
    latest round seen + 2, which has ended, slow phase and all, when the count reaches seen + 3.
    Its slow phase carried this rank's requests to rank 0; its agreement, a repeat's cache hits."""
    while rounds_taken() < seen + 3:
        time.sleep(0.001)
    comm.send(None, dest=comm.size - 1, tag=STEP_TAG)


def wait_for_the_others(comm):
    requests = [comm.irecv(source=r, tag=STEP_TAG) for r in range(comm.size - 1)]
    while not all(r.test()[0] for r in requests):  # polls gently; a blocking receive spins a core
        time.sleep(0.001)


def step(comm, prefix):
    n, rank = mpirep.size(), mpirep.rank()
    last = rank == n - 1
    if last and n > 1:
        wait_for_the_others(comm)
    smalls = [mpirep.allreduce_async(np.arange(5, dtype=np.int32) * (rank + 1) + i, op=mpirep.Sum,
                                     name=f"{prefix}small/{i}") for i in range(SMALL)]
    large = mpirep.allreduce_async(np.full(LARGE_ELEMENTS, rank + 1.0), op=mpirep.Sum, name=f"{prefix}large")
    if not last:
        tell_the_last_rank(comm, rounds_taken())
    ranks_sum = n * (n + 1) // 2
    for i, handle in enumerate(smalls):
        np.testing.assert_array_equal(mpirep.synchronize(handle), np.arange(5) * ranks_sum + n * i)
    np.testing.assert_array_equal(mpirep.synchronize(large), np.full(LARGE_ELEMENTS, float(ranks_sum)))


def wait_until_written(path, tensors, deadline_s=60):
    """Until rank 0's timeline file holds the phases of a collective for every one of `tensors`
    (the background thread writes a batch's phases together, when it is about to wait)."""
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        try:
            events = json.loads(path.read_text())
        except ValueError:  # read in the middle of a write
            events = []
        names = {e["tid"]: e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "thread_name"}
        ran = {names.get(e["tid"]) for e in events if e["ph"] == "X" and e["name"] not in ("NEGOTIATE", "QUEUE")}
        if set(tensors) <= ran:
            return
        time.sleep(0.01)
    raise AssertionError(f"rank 0: the timeline has not recorded {tensors} within {deadline_s} s")


def expect(error_class, call, text):
    try:
        call()
    except error_class as error:
        assert text in str(error), str(error)
        return
    raise AssertionError(f"rank {mpirep.rank()}: no {error_class.__name__} from {call}")


mode, folder = sys.argv[1], Path(sys.argv[2])
if mode == "runtime":
    expect(mpirep.NotInitializedError, lambda: mpirep.start_timeline(folder / "early.json"), "init")
try:
    mpirep.init(cycle_time_ms=60000, chunk_bytes=CHUNK_BYTES)
except mpirep.MpirepError as error:
    assert mode == "bad_path", error
    print(f"init failed: {error}", flush=True)
    sys.exit(0)
assert mode != "bad_path", "init with an unwritable timeline file succeeded"
comm = MPI.COMM_WORLD.Dup()

if mode == "from_init":
    step(comm, "")
    step(comm, "")
elif mode == "runtime":
    step(comm, "before/")
    mpirep.start_timeline(folder / "runtime.json", mark_cycles=sys.argv[3] == "1")
    step(comm, "")
    step(comm, "")
    mpirep.stop_timeline()
    step(comm, "after/")
    mpirep.start_timeline(str(folder / "second.json"))
    mpirep.allreduce(np.ones(3), name="second")
    mpirep.stop_timeline()
    mpirep.stop_timeline()  # stopping again does nothing
    expect(mpirep.InvalidArgumentError, lambda: mpirep.start_timeline(""), "needs a file path")
    if mpirep.rank() == 0:
        expect(mpirep.InvalidArgumentError, lambda: mpirep.start_timeline(folder / "no" / "t.json"),
               "rank 0: cannot open the timeline file")
    else:
        mpirep.start_timeline(folder / "no" / "t.json")  # only rank 0 writes
elif mode == "crash":
    step(comm, "")
    if mpirep.rank() == 0:
        wait_until_written(Path(os.environ["MPIREP_TIMELINE"]), [f"small/{i}" for i in range(SMALL)] + ["large"])
        os.kill(os.getpid(), signal.SIGKILL)
    time.sleep(60)  # the launcher ends the job when rank 0 dies
rank = mpirep.rank()
mpirep.shutdown()
print(f"rank {rank}: timeline job done", flush=True)
