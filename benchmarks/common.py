"""Shared pieces of the benchmarks: start-up, synchronised timing, medians, tables, JSON.

Every timing is taken between two barriers on an mpi4py communicator of our own, as the slowest
rank's time (an allreduce of MAX), so one number describes the collective, not one rank.
"""
import argparse
import json
import statistics
import time

import numpy as np
from mpi4py import MPI

import mpirep


def parse_args(description, extra=None):
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--json", help="write the results to this file (rank 0)")
    parser.add_argument("--config", action="append", default=[], metavar="KEY=INT",
                        help="an mpirep.init() setting, e.g. fusion_threshold=67108864")
    if extra:
        extra(parser)
    return parser.parse_args()


def start(args):
    """Initialise mpirep with the --config settings; returns them."""
    config = {}
    for item in args.config:
        key, value = item.split("=", 1)
        config[key] = int(value)
    mpirep.init(**config)
    return config


def timed(comm, fn):
    comm.Barrier()
    start_s = time.perf_counter()
    fn()
    elapsed = time.perf_counter() - start_s
    return comm.allreduce(elapsed, op=MPI.MAX)


def median_times(comm, methods, repeats, warmup=3):
    """Median seconds per method. Each method runs in blocks of its own, so that one method's
    aftermath (mpirep's background thread keeps polling for ~100 us after work) does not land
    on the next; the blocks go A B ... then ... B A, so that drift hits every method alike."""
    samples = {name: [] for name in methods}
    order = list(methods)
    for block, count in ((order, (repeats + 1) // 2), (order[::-1], repeats // 2)):
        for name in block:
            for i in range(warmup + count):
                seconds = timed(comm, methods[name])
                if i >= warmup:
                    samples[name].append(seconds)
    return {name: statistics.median(s) for name, s in samples.items()}


def busbw(nbytes, seconds, n):
    """Bus bandwidth in GB/s, as NCCL's and the OSU benchmarks report it."""
    return nbytes / seconds * 2 * (n - 1) / n / 1e9 if n > 1 else float("nan")


def exact_floats(rank, count):
    """float32 values whose sums are exact, so every algorithm's result is bit-identical."""
    return ((rank + 1) * (np.arange(count, dtype=np.int64) % 7 + 1)).astype(np.float32)


def print_table(comm, title, header, rows):
    if comm.rank != 0:
        return
    widths = [max(len(str(c)) for c in col) for col in zip(header, *rows)]
    print(f"\n{title}")
    for row in [header, ["-" * w for w in widths], *rows]:
        print("  ".join(str(c).rjust(w) for c, w in zip(row, widths)))


def write_json(comm, path, data):
    if comm.rank == 0 and path:
        with open(path, "w") as f:
            json.dump(data, f, indent=1)
