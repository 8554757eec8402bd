"""A loop of named allreduces (the response cache's fast path, as in training), checked
against their closed form; argv[1] says what the last rank does at step 50:

  freeze   it stops itself with SIGSTOP, as a process stuck in the kernel does: the others must
           end the job within the peer timeout and name it
  pause    it sleeps for argv[2] seconds in Python, longer than the peer timeout, while the
           others wait in the allreduce: its core keeps answering, so the job completes
"""
import os
import signal
import sys
import time

import numpy as np

import mpirep

STEPS = 100
mode = sys.argv[1]
mpirep.init()
rank, size = mpirep.rank(), mpirep.size()
last = size - 1
for step in range(STEPS):
    if step == 50 and rank == last:
        if mode == "freeze":
            print(f"rank {rank} freezes at {time.time():.3f}", flush=True)
            os.kill(os.getpid(), signal.SIGSTOP)
        else:
            time.sleep(float(sys.argv[2]))
    x = np.arange(256, dtype=np.float64) + 1000 * rank + step
    got = mpirep.allreduce(x, op=mpirep.Sum, name="weights")
    expected = size * (np.arange(256) + step) + 1000 * size * (size - 1) / 2
    np.testing.assert_array_equal(got, expected)
print(f"rank {rank}: {STEPS} steps, every result exact", flush=True)
