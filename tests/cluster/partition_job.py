"""Named allreduces (the response cache's fast path) for --steps steps, checked against their
closed form; rank 0 prints a step event (elastic_jobs.py reads them) every 20 steps, and the
partition tests cut the link between the hosts while it runs."""
import argparse
import json
import time

import numpy as np

import mpirep

parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=20000)
args = parser.parse_args()
mpirep.init()
rank, size = mpirep.rank(), mpirep.size()
for step in range(args.steps):
    got = mpirep.allreduce(np.arange(64.0) + 100 * rank + step, op=mpirep.Sum, name="weights")
    np.testing.assert_array_equal(got, size * (np.arange(64.0) + step) + 100 * size * (size - 1) / 2)
    if step % 20 == 0 and rank == 0:
        event = {"event": "step", "gen": 0, "rank": rank, "step": step, "time": time.time()}
        print("ELASTIC " + json.dumps(event), flush=True)
    time.sleep(0.005)
print(f"rank {rank}: {args.steps} steps, every result exact", flush=True)
