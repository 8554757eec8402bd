"""Allreduce (float32, Sum) across emulated hosts: mpirep's flat ring, mpirep's hierarchical
allreduce and MPI_Allreduce on the same buffers. The methods take turns in rounds within one
job (mpirep is restarted with hierarchical_allreduce=0 or 1 for its turn), so that load from
other work hits them alike. Besides the time, each host's bytes sent on its network interface
during the timed allreduces (its namespace's eth0 counter) give the bytes that crossed the
link per allreduce. Run on emulated hosts by across_hosts.py:

    dev/cluster/mpirun-hosts -k 2 .venv/bin/python benchmarks/across_hosts_sweep.py --json out.json
"""
import statistics
import time
from pathlib import Path

import numpy as np
from mpi4py import MPI

import mpirep
from common import busbw, exact_floats, parse_args, settle, write_json

SIZES = [64 << 10 << 2 * i for i in range(6)]  # 64 KiB, 256 KiB, ... 64 MiB
METHODS = {"flat": 0, "hierarchical": 1, "mpi": None}  # hierarchical_allreduce, or MPI


def repeats_for(nbytes):
    return max(2, min(20, (128 << 20) // nbytes))


def eth0_sent_bytes():
    """Bytes this host has sent on eth0: the emulated host's link (0 where there is none)."""
    for line in Path("/proc/net/dev").read_text().splitlines():
        name, _, counters = line.partition(":")
        if name.strip() == "eth0":
            return int(counters.split()[8])
    return 0


def timed_block(comm, fn, repeats, reporter):
    """Seconds of each call (the slowest rank's, between barriers) and each host's bytes sent
    per call; `reporter`: whether this rank reads its host's counter."""
    comm.Barrier()
    before = eth0_sent_bytes()
    seconds = []
    for _ in range(repeats):
        comm.Barrier()
        start = time.perf_counter()
        fn()
        seconds.append(comm.allreduce(time.perf_counter() - start, op=MPI.MAX))
    comm.Barrier()
    sent = (eth0_sent_bytes() - before) / repeats if reporter else None
    return seconds, [s for s in comm.allgather(sent) if s is not None]


def run_method(comm, method, sizes, buffers, outputs, samples, reporter):
    hierarchical = METHODS[method]
    if hierarchical is not None:
        mpirep.init(hierarchical_allreduce=hierarchical)
    for nbytes in sizes:
        buf, out = buffers[nbytes], outputs[nbytes]
        if hierarchical is None:
            fn = lambda: comm.Allreduce(buf, out, op=MPI.SUM)  # noqa: E731
        else:
            fn = lambda: mpirep.allreduce(buf, op=mpirep.Sum)  # noqa: E731
        if nbytes < 1 << 20:
            settle(comm, fn)
        seconds, across = timed_block(comm, fn, repeats_for(nbytes), reporter)
        entry = samples[method][nbytes]
        entry["seconds"].append(seconds)
        entry["across"].append(across)
    if hierarchical is not None:
        mpirep.shutdown()


def summary(samples, nbytes, n):
    """Per method: median seconds over every call, each round's median, and the median bytes
    each host sent per call over the buffer's size."""
    out = {}
    for method, by_size in samples.items():
        entry = by_size[nbytes]
        every = [s for block in entry["seconds"] for s in block]
        hosts = len(entry["across"][0])
        across = [statistics.median(block[h] for block in entry["across"]) / nbytes
                  for h in range(hosts)]
        out[method] = {"median_s": statistics.median(every), "min_s": min(every),
                       "max_s": max(every), "calls": len(every),
                       "round_medians_s": [statistics.median(b) for b in entry["seconds"]],
                       "busbw": busbw(nbytes, statistics.median(every), n),
                       "across_per_host": across}
    return out


def round_ratios(methods, numerator, denominator):
    ratios = [a / b for a, b in zip(methods[numerator]["round_medians_s"],
                                    methods[denominator]["round_medians_s"])]
    return {"median": statistics.median(ratios), "min": min(ratios), "max": max(ratios)}


def main():
    args = parse_args(__doc__, lambda p: (
        p.add_argument("--max-bytes", type=int, default=SIZES[-1]),
        p.add_argument("--rounds", type=int, default=5),
        p.add_argument("--methods", default=",".join(METHODS),
                       help="comma-separated, of: " + ", ".join(METHODS))))
    comm = MPI.COMM_WORLD.Dup()
    n = comm.size
    methods = args.methods.split(",")
    sizes = [s for s in SIZES if s <= args.max_bytes]
    buffers = {s: exact_floats(comm.rank, s // 4) for s in sizes}
    outputs = {s: np.empty_like(buffers[s]) for s in sizes}
    expected = {s: sum(exact_floats(r, s // 4) for r in range(n)) for s in sizes}
    mpirep.init()
    for s in sizes:  # every method gets the same bits: the sums are exact
        assert np.array_equal(mpirep.allreduce(buffers[s], op=mpirep.Sum), expected[s])
    hosts, per_host = mpirep.cross_size(), mpirep.local_size()
    reporter = mpirep.local_rank() == 0  # reads its host's counter
    mpirep.shutdown()
    samples = {m: {s: {"seconds": [], "across": []} for s in sizes} for m in methods}
    for _ in range(args.rounds):
        for method in methods:
            run_method(comm, method, sizes, buffers, outputs, samples, reporter)
    rows = []
    for nbytes in sizes:
        row = {"bytes": nbytes, "methods": summary(samples, nbytes, n)}
        if {"flat", "hierarchical"} <= set(methods):
            row["hierarchical_over_flat"] = round_ratios(row["methods"], "hierarchical", "flat")
        if {"flat", "mpi"} <= set(methods):
            row["mpi_over_flat"] = round_ratios(row["methods"], "mpi", "flat")
        rows.append(row)
    write_json(comm, args.json, {"np": n, "hosts": hosts, "per_host": per_host,
                                 "rounds": args.rounds, "rows": rows})


if __name__ == "__main__":
    main()
