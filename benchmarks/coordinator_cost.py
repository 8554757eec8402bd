"""Rank 0's negotiation work per training step as the job grows: every rank submits the same
tiny allreduces each step (so the payload costs next to nothing) and rank 0 counts what its
negotiation handled: control messages and bytes received, requests its Coordinator took in, and
the CPU time its background thread spent negotiating (thread CPU clock, so oversubscription
does not inflate it). Once with the response cache off (cache_capacity=0: every tensor goes
through rank 0, the full path) and once at the default capacity (the fast path). Run under
mpirun; the job's size is the rank count."""
import numpy as np
from mpi4py import MPI

import mpirep
from mpirep._core_loader import core
from common import parse_args, print_table, write_json

COUNTED = ("rounds", "slow_rounds", "messages_received", "bytes_received", "requests_received",
           "agreement_bytes", "work_ns")


def measure(comm, tensors, steps):
    """Rank 0's counters per step over `steps` steps, after one step that negotiates the names."""

    def step():
        handles = [mpirep.allreduce_async(x, op=mpirep.Sum, name=f"tiny.{i}") for i, x in enumerate(tensors)]
        for i, h in enumerate(handles):
            got = mpirep.synchronize(h)
            expected = sum(r + i for r in range(comm.size))
            assert np.all(got == expected), f"rank {comm.rank}: tiny.{i} gave {got}, expected {expected}"

    step()
    comm.Barrier()
    core().time_negotiation(True)
    before = core().negotiation_stats()
    for _ in range(steps):
        step()
    after = core().negotiation_stats()
    core().time_negotiation(False)
    comm.Barrier()
    return {key: (after[key] - before[key]) / steps for key in COUNTED}


def main():
    def options(parser):
        parser.add_argument("--steps", type=int, default=50)
        parser.add_argument("--tensors", type=int, default=16, help="allreduces per step")

    args = parse_args(__doc__, options)
    comm = MPI.COMM_WORLD.Dup()
    tensors = [np.full(4, comm.rank + i, dtype=np.float32) for i in range(args.tensors)]
    results = {}
    for path, capacity in (("full", 0), ("fast", 1024)):
        mpirep.init(cache_capacity=capacity)
        results[path] = measure(comm, tensors, args.steps)
        mpirep.shutdown()
    rows = [[path, f"{r['rounds']:.1f}", f"{r['slow_rounds']:.1f}", f"{r['messages_received']:.1f}",
             f"{r['bytes_received']:.0f}", f"{r['requests_received']:.1f}", f"{r['work_ns'] / 1e3:.1f}"]
            for path, r in results.items()]
    print_table(comm, f"rank 0 per step of {args.tensors} tiny allreduces, np={comm.size}",
                ["path", "rounds", "slow rounds", "messages in", "bytes in", "requests", "CPU us"], rows)
    write_json(comm, args.json, {"np": comm.size, "tensors": args.tensors, "steps": args.steps,
                                 "per_step": results})


if __name__ == "__main__":
    main()
