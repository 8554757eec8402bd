"""The collectives other than allreduce against MPI's own on the same buffers, in the same run:
mpirep.broadcast vs MPI_Bcast, allgather (the core's ring) vs MPI_Allgatherv, reducescatter
(the core's ring reduce-scatter) vs MPI_Reduce_scatter, alltoall (the core's pairwise exchange)
vs MPI_Alltoallv. This is how the core's choice of algorithm for each was checked.
Run under mpirun."""
import numpy as np
from mpi4py import MPI

import mpirep
from common import exact_floats, median_times, parse_args, print_table, start, write_json
from units import human_bytes

SIZES = [64 << 10, 1 << 20, 16 << 20, 64 << 20]  # bytes each rank contributes


def repeats_for(nbytes):
    return max(5, min(40, (256 << 20) // nbytes))


def methods_for(comm, nbytes):
    """(mpirep call, MPI call, check) per collective, on `nbytes` of float32 per rank."""
    n, rank = comm.size, comm.rank
    count = nbytes // 4
    rows = count // n * n  # divisible by n, for reducescatter and alltoall
    x = exact_floats(rank, count)
    x_rows = exact_floats(rank, rows)
    gathered = np.empty(count * n, np.float32)
    scattered = np.empty(rows // n, np.float32)
    exchanged = np.empty(rows, np.float32)
    bcast_buf = x.copy()
    return {
        "broadcast": (lambda: mpirep.broadcast(x, root_rank=0),
                      lambda: comm.Bcast(bcast_buf, root=0),
                      lambda: np.array_equal(mpirep.broadcast(x, 0), exact_floats(0, count))),
        "allgather": (lambda: mpirep.allgather(x),
                      lambda: comm.Allgatherv(x, gathered),
                      lambda: (comm.Allgatherv(x, gathered), np.array_equal(mpirep.allgather(x), gathered))[1]),
        "reducescatter": (lambda: mpirep.reducescatter(x_rows, op=mpirep.Sum),
                          lambda: comm.Reduce_scatter_block(x_rows, scattered, op=MPI.SUM),
                          lambda: (comm.Reduce_scatter_block(x_rows, scattered, op=MPI.SUM),
                                   np.array_equal(mpirep.reducescatter(x_rows, op=mpirep.Sum), scattered))[1]),
        "alltoall": (lambda: mpirep.alltoall(x_rows),
                     lambda: comm.Alltoall(x_rows, exchanged),
                     lambda: (comm.Alltoall(x_rows, exchanged), np.array_equal(mpirep.alltoall(x_rows), exchanged))[1]),
    }


def main():
    args = parse_args(__doc__, lambda p: p.add_argument("--max-bytes", type=int, default=SIZES[-1]))
    comm = MPI.COMM_WORLD.Dup()
    config = start(args)
    rows = []
    for nbytes in [s for s in SIZES if s <= args.max_bytes]:
        for name, (ours, theirs, check) in methods_for(comm, nbytes).items():
            assert check(), f"{name} at {nbytes} bytes: mpirep and MPI disagree"
            t = median_times(comm, {"mpirep": ours, "mpi": theirs}, repeats_for(nbytes))
            rows.append({"collective": name, "bytes": nbytes, "mpirep_s": t["mpirep"],
                         "mpi_s": t["mpi"], "ratio": t["mpirep"] / t["mpi"]})
    print_table(comm, f"collectives vs MPI, np={comm.size} (ratio = mpirep time / MPI time; < 1 is faster)",
                ["collective", "bytes/rank", "mpirep ms", "MPI ms", "ratio"],
                [[r["collective"], human_bytes(r["bytes"]), f"{r['mpirep_s'] * 1e3:.3f}",
                  f"{r['mpi_s'] * 1e3:.3f}", f"{r['ratio']:.2f}"] for r in rows])
    write_json(comm, args.json, {"np": comm.size, "config": config, "rows": rows})
    mpirep.shutdown()


if __name__ == "__main__":
    main()
