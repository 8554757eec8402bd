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
from mpirep._core_loader import core


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


def settle(comm, fn, seconds=1e-3):
    """Call fn until every rank has spent `seconds` on it (twice at least), so that what ran
    before (mpirep's background thread polls for ~100 us after work) is over when timing starts."""
    start_s, calls = time.perf_counter(), 0
    while True:
        fn()
        calls += 1
        if comm.allreduce(calls >= 2 and time.perf_counter() - start_s >= seconds, op=MPI.LAND):
            return


def median_times(comm, methods, repeats, block=3):
    """Median seconds per method. The methods take turns in short blocks, so that drift hits
    them alike; each block settles first, so that one method's aftermath does not land on the
    next one's timings."""
    samples = {name: [] for name in methods}
    while len(samples[next(iter(methods))]) < repeats:
        for name, fn in methods.items():
            settle(comm, fn)
            count = min(block, repeats - len(samples[name]))
            samples[name] += [timed(comm, fn) for _ in range(count)]
    return {name: statistics.median(s) for name, s in samples.items()}


def busbw(nbytes, seconds, n):
    """Bus bandwidth in GB/s, as NCCL's and the OSU benchmarks report it."""
    return nbytes / seconds * 2 * (n - 1) / n / 1e9 if n > 1 else float("nan")


def copy_bound(buf):
    """What bounds a collective inside a host: every rank copying `buf` once into memory of its
    own, all at the same time. An out-of-place allreduce must at least read its input and write
    its output, and the ranks share the memory's bandwidth. Two copies to be timed: a plain one
    (np.copyto) and one whose stores bypass the cache, as the core writes large outputs, which
    is the faster where a plain store must first fetch each line of the destination. The faster
    of the two is the bound (`bound_seconds`)."""
    out = np.zeros_like(buf)  # touched already, as the outputs of what it bounds
    stream_copy = core().stream_copy
    return {"copy": lambda: np.copyto(out, buf), "stream_copy": lambda: stream_copy(out, buf)}


def bound_seconds(times):
    """The copy bound from median_times' results of copy_bound's two copies."""
    return min(times["copy"], times["stream_copy"])


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
