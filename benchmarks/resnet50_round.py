"""One ResNet-50 gradient round: the 214 float32 gradients issued as async mpirep allreduces
(Sum, in backprop order: last layer first), against one MPI_Allreduce of all 25,583,592 floats
and against 214 separate MPI_Allreduce calls, in the same run. Both MPI baselines run out of
place and in place; the faster counts. The bound is every rank copying its gradients once at the
same time, the faster of a plain copy and one that bypasses the cache (common.copy_bound).
Run under mpirun."""
import numpy as np
from mpi4py import MPI

import mpirep
from common import bound_seconds, copy_bound, exact_floats, median_times, parse_args, print_table, start, write_json
from resnet50_shapes import SHAPES, TOTAL, split


def main():
    args = parse_args(__doc__, lambda p: p.add_argument("--repeats", type=int, default=15))
    comm = MPI.COMM_WORLD.Dup()
    config = start(args)
    flat = exact_floats(comm.rank, TOTAL)
    flat_out = np.empty_like(flat)
    work = flat.copy()  # reduced in place again and again: only its time counts
    grads = split(flat)
    outs = [np.empty_like(g) for g in grads]
    works = split(work)
    order = list(reversed(range(len(grads))))

    def mpirep_round():
        handles = [mpirep.allreduce_async(grads[i], op=mpirep.Sum, name=f"grad.{i}") for i in order]
        return [mpirep.synchronize(h) for h in handles]

    def mpi_per_tensor():
        for i in order:
            comm.Allreduce(grads[i], outs[i], op=MPI.SUM)

    def mpi_per_tensor_in_place():
        for i in order:
            comm.Allreduce(MPI.IN_PLACE, works[i], op=MPI.SUM)

    results = mpirep_round()
    comm.Allreduce(flat, flat_out, op=MPI.SUM)
    for i, r in zip(order, results):
        assert np.array_equal(r, split(flat_out)[i]), f"tensor {i} differs"
    del results

    t = median_times(comm, {
        "mpirep": mpirep_round,
        "mpi_fused": lambda: comm.Allreduce(flat, flat_out, op=MPI.SUM),
        "mpi_fused_in_place": lambda: comm.Allreduce(MPI.IN_PLACE, work, op=MPI.SUM),
        "mpi_per_tensor": mpi_per_tensor,
        "mpi_per_tensor_in_place": mpi_per_tensor_in_place,
        **copy_bound(flat),
    }, args.repeats)
    t["mpi_fused"] = min(t["mpi_fused"], t.pop("mpi_fused_in_place"))
    t["mpi_per_tensor"] = min(t["mpi_per_tensor"], t.pop("mpi_per_tensor_in_place"))
    best = min(t["mpi_fused"], t["mpi_per_tensor"])
    bound = bound_seconds(t)
    rows = [[name, f"{s * 1e3:.2f}", f"{t['mpirep'] / s:.2f}"] for name, s in t.items()]
    print_table(comm, f"ResNet-50 gradient round, {len(SHAPES)} tensors, {TOTAL * 4 / 2**20:.1f} MiB, "
                f"np={comm.size}, median of {args.repeats}, config={config or 'default'}; "
                f"mpirep / best MPI baseline = {t['mpirep'] / best:.2f}, mpirep / copy bound = {t['mpirep'] / bound:.2f}",
                ["method", "round ms", "mpirep / this"], rows)
    write_json(comm, args.json, {"np": comm.size, "config": config, "repeats": args.repeats,
                                 "seconds": t, "ratio_to_best_mpi": t["mpirep"] / best,
                                 "ratio_to_bound": t["mpirep"] / bound})
    mpirep.shutdown()


if __name__ == "__main__":
    main()
