"""Rank 1 comes late to the tensor 'late_tensor': by argv[2] seconds (argv[1] = "warn"), or never
(argv[1] = "never"). The stall inspector is set to warn after 1 s and, for "never", to abort
the job after 3 s."""
import sys
import time

import numpy as np

import mpirep

mode = sys.argv[1]
mpirep.init(stall_check_time_seconds=1, stall_shutdown_time_seconds=3 if mode == "never" else 0)
n, rank = mpirep.size(), mpirep.rank()
if rank == 1:
    # the stimulus the stall inspector must notice: nothing waits on this, the others are blocked
    time.sleep(float(sys.argv[2]) if mode == "warn" else 600)
result = mpirep.allreduce(np.full(3, rank + 1.0), op=mpirep.Sum, name="late_tensor")
assert (result == n * (n + 1) / 2).all(), result
mpirep.shutdown()
