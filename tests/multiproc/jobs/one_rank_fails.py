"""Rank 1 fails in the way named by argv[1] while the other ranks wait in an allreduce for it.

The job must end by itself, non-zero, soon, naming rank 1.
"""
import os
import signal
import sys

import numpy as np

import mpirep

mpirep.init()
warmup = mpirep.allreduce(np.arange(4.0), op=mpirep.Sum)
assert warmup[3] == 3.0 * mpirep.size(), warmup
if mpirep.rank() == 1:
    mode = sys.argv[1]
    if mode == "raise":
        raise RuntimeError("this rank raised before its allreduce")
    if mode == "exit":
        sys.exit(3)
    if mode == "exit0":
        sys.exit(0)
    if mode == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    raise ValueError(f"unknown mode {mode}")
mpirep.allreduce(np.arange(8.0), name="never_completes")
