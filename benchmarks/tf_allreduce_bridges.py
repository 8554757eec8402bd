"""TF-level allreduce through each bridge against the core's numpy-level allreduce.

    mpirun -np 2 python benchmarks/tf_allreduce_bridges.py [--json FILE] [--quick]

For 4 KiB and 64 MiB float32 tensors: mpirep.allreduce on a numpy array, then
mpirep.tensorflow.allreduce eagerly and inside a tf.function, through the op library (native)
and through tf.numpy_function (numpy). Each time is the median per call, slowest rank.
"""

import argparse
import json
import statistics
import time

import numpy as np
import tensorflow as tf
from mpi4py import MPI

import mpirep
import mpirep.tensorflow as hvd
from mpirep.tensorflow import _bridge

SIZES = {"4 KiB": (4 * 1024, 300), "64 MiB": (64 * 1024 * 1024, 6)}  # bytes, calls timed
QUICK_DIVISOR = 10  # --quick times a tenth of the calls (at least 2)


def timed(call, iterations):
    call()  # warm up: tracing, buffers
    samples = []
    for _ in range(iterations):
        MPI.COMM_WORLD.Barrier()
        start = time.perf_counter()
        call()
        samples.append(time.perf_counter() - start)
    return MPI.COMM_WORLD.allreduce(statistics.median(samples), op=MPI.MAX)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", help="write the results to this file (rank 0)")
    parser.add_argument("--quick", action="store_true", help="fewer calls per measure")
    args = parser.parse_args()
    hvd.init()
    rows = []
    for label, (nbytes, iterations) in SIZES.items():
        if args.quick:
            iterations = max(2, iterations // QUICK_DIVISOR)
        array = np.full(nbytes // 4, hvd.rank() + 1.0, np.float32)
        tensor = tf.constant(array)
        rows.append((label, "numpy API", timed(lambda: mpirep.allreduce(array, name="np"),
                                               iterations)))
        for mode in ("native", "numpy"):
            _bridge.select(mode)
            eager = lambda: hvd.allreduce(tensor, name=f"eager.{mode}").numpy()  # noqa: E731
            graph = tf.function(lambda t: hvd.allreduce(t, name=f"graph.{mode}"))
            rows.append((label, f"TF eager, {mode} bridge", timed(eager, iterations)))
            rows.append((label, f"TF tf.function, {mode} bridge",
                         timed(lambda: graph(tensor).numpy(), iterations)))
    if hvd.rank() == 0:
        print(f"allreduce of float32 at {hvd.size()} ranks (median per call, slowest rank)")
        print(f"{'size':>7}  {'path':34}{'time':>12}  vs numpy API")
        base = {}
        for label, path, seconds in rows:
            base.setdefault(label, seconds)
            print(f"{label:>7}  {path:34}{seconds * 1e3:10.3f}ms  {seconds / base[label]:6.2f}x")
        if args.json:
            with open(args.json, "w") as f:
                json.dump({"np": hvd.size(), "rows": [{"size": label, "path": path, "seconds": seconds}
                                                      for label, path, seconds in rows]}, f, indent=1)


if __name__ == "__main__":
    main()
