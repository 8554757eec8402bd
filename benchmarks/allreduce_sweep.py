"""Allreduce sweep, 4 KiB to 256 MiB of float32: mpirep.allreduce(op=Sum) against mpi4py's
comm.Allreduce on the same buffer, out of place and in place (the faster counts), and against
the physical bound inside a host, in the same run: every rank copying its buffer once at the
same time, the faster of a plain copy and one that bypasses the cache (common.copy_bound).
Run under mpirun."""
import numpy as np
from mpi4py import MPI

import mpirep
from common import bound_seconds, busbw, copy_bound, exact_floats, median_times, parse_args, print_table, start, write_json
from units import human_bytes

SIZES = [4 << 10 << 2 * i for i in range(9)]  # 4 KiB, 16 KiB, ... 256 MiB


def repeats_for(nbytes):
    return max(5, min(50, (512 << 20) // nbytes))


def main():
    args = parse_args(__doc__, lambda p: (
        p.add_argument("--max-bytes", type=int, default=SIZES[-1]),
        p.add_argument("--plot", help="draw bus bandwidth against size into this PNG (rank 0)")))
    comm = MPI.COMM_WORLD.Dup()
    config = start(args)
    n = comm.size
    rows = []
    for nbytes in [s for s in SIZES if s <= args.max_bytes]:
        buf = exact_floats(comm.rank, nbytes // 4)
        out = np.empty_like(buf)
        work = buf.copy()  # reduced in place again and again: only its time counts
        mine = mpirep.allreduce(buf, op=mpirep.Sum)
        comm.Allreduce(buf, out, op=MPI.SUM)
        assert np.array_equal(mine, out), f"mpirep and MPI disagree at {nbytes} bytes"
        del mine
        t = median_times(comm, {
            "mpirep": lambda: mpirep.allreduce(buf, op=mpirep.Sum),
            "mpi": lambda: comm.Allreduce(buf, out, op=MPI.SUM),
            "mpi_in_place": lambda: comm.Allreduce(MPI.IN_PLACE, work, op=MPI.SUM),
            **copy_bound(buf),
        }, repeats_for(nbytes))
        t["mpi"] = min(t["mpi"], t.pop("mpi_in_place"))
        bound = bound_seconds(t)
        rows.append({"bytes": nbytes, "repeats": repeats_for(nbytes),
                     "mpirep_s": t["mpirep"], "mpi_s": t["mpi"],
                     "mpirep_busbw": busbw(nbytes, t["mpirep"], n),
                     "mpi_busbw": busbw(nbytes, t["mpi"], n), "ratio": t["mpirep"] / t["mpi"],
                     "copy_s": t["copy"], "stream_copy_s": t["stream_copy"], "bound_s": bound,
                     "to_bound": t["mpirep"] / bound})
    print_table(comm, f"allreduce float32 Sum, np={n}, config={config or 'default'} "
                "(ratio = mpirep time / MPI_Allreduce time; < 1 is faster; "
                "to bound = mpirep time / every rank's one copy of the buffer, the faster way)",
                ["size", "mpirep ms", "MPI ms", "bound ms", "mpirep GB/s", "MPI GB/s", "ratio", "to bound"],
                [[human_bytes(r["bytes"]), f"{r['mpirep_s'] * 1e3:.3f}", f"{r['mpi_s'] * 1e3:.3f}",
                  f"{r['bound_s'] * 1e3:.3f}", f"{r['mpirep_busbw']:.2f}", f"{r['mpi_busbw']:.2f}",
                  f"{r['ratio']:.2f}", f"{r['to_bound']:.2f}"]
                 for r in rows])
    result = {"np": n, "config": config, "rows": rows}
    write_json(comm, args.json, result)
    if args.plot and comm.rank == 0:
        from plot import plot_sweep
        plot_sweep({f"np={n}": result}, args.plot)
    mpirep.shutdown()


if __name__ == "__main__":
    main()
