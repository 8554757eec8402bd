"""What the core does per training step with and without XLA: Keras Model.fit of an MLP with
DistributedOptimizer, jit_compile=False (one op per gradient, overlapping backprop) against
jit_compile=True (one custom call for all gradients), read from the core's counters and from rank
0's timeline. Counts, not times, so the load of a shared host does not change them much.

    mpirun -np 2 python benchmarks/tf_xla_collectives.py

Reported per step: tensors submitted (the core's cached_tensors + requests_sent), the slow
negotiation rounds (some rank sent rank 0 requests), and from the timeline the collectives run
(fused batches) and the gradients per batch. The core's plain round count is left out: an idle
rank takes part in a round every millisecond, so it measures the step's length, not its work.
"""

import argparse
import json
import os
import statistics
import tempfile
from collections import defaultdict

import numpy as np
import tensorflow as tf

import mpirep.tensorflow.keras as hvd
from mpirep._core_loader import core

LAYERS = 8  # Dense layers: 16 gradient tensors


def model(jit_compile):
    tf.keras.utils.set_random_seed(1)
    layers = [tf.keras.Input((64,))] + [tf.keras.layers.Dense(64, activation="relu")
                                        for _ in range(LAYERS - 1)] + [tf.keras.layers.Dense(1)]
    m = tf.keras.Sequential(layers)
    m.compile(optimizer=hvd.DistributedOptimizer(tf.keras.optimizers.SGD(0.01)), loss="mse",
              jit_compile=jit_compile)
    return m


def batches(path):
    """Rank 0's timeline: the collectives run, each as the sizes of its fused batch."""
    with open(path) as f:
        events = json.load(f)
    starts = defaultdict(set)
    for event in events:
        if event.get("ph") == "X" and event["name"].endswith("ALLREDUCE"):
            starts[(event["ts"], event["dur"])].add(event["tid"])
    return [len(tids) for tids in starts.values()]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--json", help="write the results to this file (rank 0)")
    args = parser.parse_args()
    hvd.init()
    rank = hvd.rank()
    rng = np.random.default_rng(rank)
    x = rng.normal(size=(args.steps * 16, 64)).astype(np.float32)
    y = rng.normal(size=(args.steps * 16, 1)).astype(np.float32)
    results = {}
    for jit in (False, True):
        m = model(jit)
        m.fit(x[:64], y[:64], batch_size=16, epochs=1, verbose=0)  # trace, negotiate once
        path = os.path.join(tempfile.gettempdir(), f"mpirep_xla_collectives_{os.getpid()}.json")
        before = core().negotiation_stats()
        hvd.start_timeline(path)
        m.fit(x, y, batch_size=16, epochs=1, verbose=0)
        hvd.stop_timeline()
        after = core().negotiation_stats()
        done = {k: (after[k] - before[k]) / args.steps
                for k in ("cached_tensors", "requests_sent", "slow_rounds")}
        if rank == 0:
            sizes = batches(path)
            os.unlink(path)
            done["collectives"] = len(sizes) / args.steps
            done["gradients_per_collective"] = statistics.mean(sizes)
        results["XLA" if jit else "graph"] = done
    if rank == 0:
        print(f"Model.fit, {LAYERS} Dense layers ({2 * LAYERS} gradients), {hvd.size()} ranks, "
              f"per step over {args.steps} steps")
        print(f"{'step':8}{'tensors':>10}{'slow rounds':>14}{'collectives':>14}{'grads each':>12}")
        for name, r in results.items():
            tensors = r["cached_tensors"] + r["requests_sent"]
            print(f"{name:8}{tensors:10.2f}{r['slow_rounds']:14.2f}{r['collectives']:14.2f}"
                  f"{r['gradients_per_collective']:12.2f}")
        if args.json:
            with open(args.json, "w") as f:
                json.dump({"np": hvd.size(), "steps": args.steps, "results": results}, f, indent=1)


if __name__ == "__main__":
    main()
