"""Many small tensors: 1,000 async mpirep allreduces of 4 KiB each, submitted together, against
1,000 per-tensor MPI_Allreduce calls; the latency of one blocking mpirep allreduce of 4 KiB
against one MPI_Allreduce, for a named tensor repeated every call (as in training: after the
first call it runs from the response cache) and for an unnamed one (a new tensor every call,
negotiated through rank 0 each time); and what an idle mpirep costs others: MPI_Allreduce
latency before mpirep.init against after it, with no mpirep work in between. Run under
mpirun."""
import numpy as np
from mpi4py import MPI

import mpirep
from common import exact_floats, median_times, parse_args, print_table, start, write_json

COUNT = 1000
FLOATS = 1024  # 4 KiB of float32
# row label, and the prefix of its keys in the JSON's us_per_tensor (run_all.py reads them too)
CASES = [(f"{COUNT} in flight", "batch"), ("one at a time (blocking)", "single"),
         ("one at a time, unnamed", "unnamed")]


def main():
    args = parse_args(__doc__, lambda p: p.add_argument("--repeats", type=int, default=15))
    comm = MPI.COMM_WORLD.Dup()
    tensors = [exact_floats(comm.rank + i, FLOATS) for i in range(COUNT)]
    outs = [np.empty_like(x) for x in tensors]
    one, one_out = tensors[0], outs[0]

    def mpi_one():
        comm.Allreduce(one, one_out, op=MPI.SUM)

    before_init = median_times(comm, {"mpi": mpi_one}, args.repeats * 20)["mpi"]
    config = start(args)
    idle = median_times(comm, {"mpi": mpi_one}, args.repeats * 20)["mpi"]

    def mpirep_batch():
        handles = [mpirep.allreduce_async(x, op=mpirep.Sum, name=f"small.{i}")
                   for i, x in enumerate(tensors)]
        return [mpirep.synchronize(h) for h in handles]

    def mpi_batch():
        for x, out in zip(tensors, outs):
            comm.Allreduce(x, out, op=MPI.SUM)

    for got, x, out in zip(mpirep_batch(), tensors, outs):
        comm.Allreduce(x, out, op=MPI.SUM)
        assert np.array_equal(got, out)

    batch = median_times(comm, {"mpirep": mpirep_batch, "mpi": mpi_batch}, args.repeats)
    # Each case against a baseline of its own, in blocks that alternate with it.
    single = median_times(comm, {
        "mpirep": lambda: mpirep.allreduce(one, op=mpirep.Sum, name="small.lone"),
        "mpi": mpi_one}, args.repeats * 20)
    unnamed = median_times(comm, {"mpirep": lambda: mpirep.allreduce(one, op=mpirep.Sum),
                                  "mpi": mpi_one}, args.repeats * 20)
    us = {"batch_mpirep": batch["mpirep"] / COUNT * 1e6, "batch_mpi": batch["mpi"] / COUNT * 1e6,
          "single_mpirep": single["mpirep"] * 1e6, "single_mpi": single["mpi"] * 1e6,
          "unnamed_mpirep": unnamed["mpirep"] * 1e6, "unnamed_mpi": unnamed["mpi"] * 1e6,
          "mpi_before_init": before_init * 1e6, "mpi_idle_mpirep": idle * 1e6}
    print_table(comm, f"4 KiB float32 allreduces, np={comm.size}, config={config or 'default'} "
                "(ratio = mpirep / MPI)",
                ["case", "mpirep us/tensor", "MPI us/tensor", "ratio"],
                [[case, f"{us[key + '_mpirep']:.1f}", f"{us[key + '_mpi']:.1f}",
                  f"{us[key + '_mpirep'] / us[key + '_mpi']:.2f}"] for case, key in CASES])
    print_table(comm, "MPI_Allreduce of 4 KiB beside an idle mpirep (ratio = after / before init)",
                ["before init us", "after init us", "ratio"],
                [[f"{us['mpi_before_init']:.1f}", f"{us['mpi_idle_mpirep']:.1f}",
                  f"{us['mpi_idle_mpirep'] / us['mpi_before_init']:.2f}"]])
    write_json(comm, args.json, {"np": comm.size, "config": config, "repeats": args.repeats,
                                 "us_per_tensor": us})
    mpirep.shutdown()


if __name__ == "__main__":
    main()
