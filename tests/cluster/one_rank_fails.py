"""One rank fails, in the way argv[1] names, while the others wait for it in a collective:

  raise         an uncaught exception instead of its next allreduce
  exit, exit0   sys.exit(3) or sys.exit(0) instead of its next allreduce
  kill          SIGKILL instead of its next allreduce (the others wait in negotiation)
  kill_in_data  SIGKILL while a 64 MiB allreduce is on the wire (the others wait in the ring)

argv[2] is the failing rank (default 1). Just before failing it prints `FAILING <unix time>`,
from which the drivers time how long the whole job takes to end. The tensor the others wait in
has run twice before, so their submissions of it are response cache hits.
"""
import os
import signal
import sys
import time

import numpy as np

import mpirep


def fail(mode, rank):
    print(f"FAILING {time.time():.3f}", flush=True)
    if mode == "raise":
        raise RuntimeError(f"rank {rank} raised in the middle of training")
    if mode in ("exit", "exit0"):
        sys.exit(3 if mode == "exit" else 0)
    os.kill(os.getpid(), signal.SIGKILL)


def main(mode, failing_rank):
    mpirep.init()
    rank = mpirep.rank()
    warmup = mpirep.allreduce(np.arange(4.0), op=mpirep.Sum, name="warmup")
    assert warmup[3] == 3.0 * mpirep.size(), warmup
    for _ in range(2):
        mpirep.allreduce(np.arange(8.0), name="waited_in")
    if mode == "kill_in_data":
        gradients = np.full(16 << 20, rank, np.float32)
        handle = mpirep.allreduce_async(gradients, op=mpirep.Sum, name="gradients")
        if rank == failing_rank:
            time.sleep(0.05)  # negotiation takes about a millisecond: the ring is running now
            fail(mode, rank)
        mpirep.synchronize(handle)
    elif rank == failing_rank:
        fail(mode, rank)
    mpirep.allreduce(np.arange(8.0), name="waited_in")


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 1)
