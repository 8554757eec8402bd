"""Collectives for tests/multiproc/test_timeline.py to find in rank 0's timeline. argv[1] says how
the timeline is recorded, argv[2] is the folder the timelines go to:

  from_init  MPIREP_TIMELINE (set by the driver) records from init on; two steps
  runtime    start_timeline(argv[2]/runtime.json, mark_cycles=argv[3] == "1") after a step that
             must not be recorded, two steps, stop_timeline, a step that must not be recorded;
             then a second file, argv[2]/second.json, with one allreduce; and the errors of
             start_timeline
  crash      MPIREP_TIMELINE records one step, then rank 0 kills itself
  bad_path   MPIREP_TIMELINE names a file rank 0 cannot create: init fails on every rank

A step: every rank submits four small allreduces and a large one, asynchronously, the last rank
a quarter of a second after the others, so that it is the last rank the timeline names (and well
within the second after which rank 0 sends a cached tensor that some ranks have not submitted
back to full negotiation, which would split the step's fused pass); a cycle time longer
than the job holds the small ones until all are ready, so that they fuse into one ring pass.
"""
import os
import signal
import sys
import time
from pathlib import Path

import numpy as np

import mpirep

SMALL = 4
LARGE_ELEMENTS = 32768  # 256 KiB of float64: small_allreduce_bytes (64 KiB) x 4 ranks, so it runs alone
CHUNK_BYTES = 4096


def step(prefix):
    n, rank = mpirep.size(), mpirep.rank()
    if rank == n - 1:
        time.sleep(0.25)
    smalls = [mpirep.allreduce_async(np.arange(5, dtype=np.int32) * (rank + 1) + i, op=mpirep.Sum,
                                     name=f"{prefix}small/{i}") for i in range(SMALL)]
    large = mpirep.allreduce_async(np.full(LARGE_ELEMENTS, rank + 1.0), op=mpirep.Sum, name=f"{prefix}large")
    ranks_sum = n * (n + 1) // 2
    for i, handle in enumerate(smalls):
        np.testing.assert_array_equal(mpirep.synchronize(handle), np.arange(5) * ranks_sum + n * i)
    np.testing.assert_array_equal(mpirep.synchronize(large), np.full(LARGE_ELEMENTS, float(ranks_sum)))


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

if mode == "from_init":
    step("")
    step("")
elif mode == "runtime":
    step("before/")
    mpirep.start_timeline(folder / "runtime.json", mark_cycles=sys.argv[3] == "1")
    step("")
    step("")
    mpirep.stop_timeline()
    step("after/")
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
    step("")
    if mpirep.rank() == 0:
        time.sleep(0.5)  # the background thread is idle, and has written what it recorded
        os.kill(os.getpid(), signal.SIGKILL)
    time.sleep(60)  # the launcher ends the job when rank 0 dies
rank = mpirep.rank()
mpirep.shutdown()
print(f"rank {rank}: timeline job done", flush=True)
