"""One rank fails, in the way argv[1] names, while the others wait for it in a collective:

  raise         an uncaught exception instead of its next allreduce
  exit, exit0   sys.exit(3) or sys.exit(0) instead of its next allreduce
  kill          SIGKILL instead of its next allreduce (the others wait in negotiation)
  kill_in_data  SIGKILL while a 64 MiB allreduce is on the wire (the others wait in the ring)

argv[2] is the failing rank. argv[3] is a folder for what the driver checks, written to files
rather than printed, since a launcher that ends a failed job may cut its output: just before
failing, the failing rank writes the time to failing.txt, from which the driver times how long
the whole job takes to end; each other rank that sees an error writes it to rank<N>.txt and
raises it on. The tensor the others wait in has run twice before, so their submissions of it
are response cache hits.
"""
import os
import signal
import sys
import time
from pathlib import Path

import numpy as np

import mpirep


def fail(mode, rank, records):
    (records / "failing.txt").write_text(f"{time.time():.3f}")
    if mode == "raise":
        raise RuntimeError(f"rank {rank} raised in the middle of training")
    if mode in ("exit", "exit0"):
        sys.exit(3 if mode == "exit" else 0)
    os.kill(os.getpid(), signal.SIGKILL)


def main(mode, failing_rank, records):
    mpirep.init()
    rank = mpirep.rank()
    try:
        wait_for_the_failure(mode, rank, failing_rank, records)
    except Exception as error:
        if rank != failing_rank:
            (records / f"rank{rank}.txt").write_text(f"{type(error).__name__}: {error}")
        raise


def wait_for_the_failure(mode, rank, failing_rank, records):
    warmup = mpirep.allreduce(np.arange(4.0), op=mpirep.Sum, name="warmup")
    assert warmup[3] == 3.0 * mpirep.size(), warmup
    for _ in range(2):
        mpirep.allreduce(np.arange(8.0), name="waited_in")
    if mode == "kill_in_data":
        gradients = np.full(16 << 20, rank, np.float32)
        handle = mpirep.allreduce_async(gradients, op=mpirep.Sum, name="gradients")
        if rank == failing_rank:
            time.sleep(0.05)  # negotiation takes about a millisecond: the ring is running now
            fail(mode, rank, records)
        mpirep.synchronize(handle)
    elif rank == failing_rank:
        fail(mode, rank, records)
    mpirep.allreduce(np.arange(8.0), name="waited_in")


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), Path(sys.argv[3]))
