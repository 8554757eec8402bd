"""Rank program of the cluster tests.  Every rank prints one line:

  RANK <rank>/<size> host=<h> local=<local_rank>/<local_size> cross=<cross_rank>/<cross_size>
       allreduce_ok=<bool> backend=<mpirep|mpi4py> slurm_procid=<SLURM_PROCID or ->

The topology and the allreduce come from mpirep's native core when it is built (installed,
or built in place in this checkout), else from mpi4py: local = MPI's shared-memory split,
cross = the ranks with the same local rank.  MPIREP_RANK_BACKEND=mpirep|mpi4py forces one.
Never from SLURM_PROCID, printed only to show the trap: under mpirun inside sbatch every
rank sees 0.  With --exit-code N, rank --exit-rank (default the last) exits with N after
the allreduce.
"""
import argparse
import importlib.util
import os
import pathlib
import socket
import sys

import numpy as np

# appended, not prepended: an installed mpirep wins over this checkout's
sys.path.append(str(pathlib.Path(__file__).resolve().parents[2]))


def core_is_built():
    try:
        return importlib.util.find_spec("mpirep._core") is not None
    except ImportError:
        return False


def mpirep_backend():
    import mpirep
    mpirep.init()
    topology = (mpirep.rank(), mpirep.size(), mpirep.local_rank(), mpirep.local_size(),
                mpirep.cross_rank(), mpirep.cross_size())
    return "mpirep", topology, lambda x: mpirep.allreduce(x, op=mpirep.Sum)


def mpi4py_backend():
    from mpi4py import MPI
    world = MPI.COMM_WORLD
    local = world.Split_type(MPI.COMM_TYPE_SHARED, key=world.rank)
    cross = world.Split(color=local.rank, key=world.rank)
    topology = (world.rank, world.size, local.rank, local.size, cross.rank, cross.size)

    def allreduce(x):
        out = np.empty_like(x)
        world.Allreduce(x, out, op=MPI.SUM)
        return out
    return "mpi4py", topology, allreduce


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--exit-code", type=int, default=0)
    parser.add_argument("--exit-rank", type=int, default=-1)
    args = parser.parse_args()

    choice = os.environ.get("MPIREP_RANK_BACKEND") or ("mpirep" if core_is_built() else "mpi4py")
    backend, (rank, size, local_rank, local_size, cross_rank, cross_size), allreduce = (
        mpirep_backend() if choice == "mpirep" else mpi4py_backend())
    index = np.arange(6, dtype=np.float64)
    got = allreduce(index * (rank + 1) + rank)
    # sum over r of (index * (r + 1) + r)
    expected = index * size * (size + 1) / 2 + size * (size - 1) / 2
    ok = bool(np.array_equal(got, expected))
    line = (f"RANK {rank}/{size} host={socket.gethostname()} local={local_rank}/{local_size} "
            f"cross={cross_rank}/{cross_size} allreduce_ok={ok} backend={backend} "
            f"slurm_procid={os.environ.get('SLURM_PROCID', '-')}\n")
    # one write per line: launchers forward output in chunks, and ranks' chunks interleave
    sys.stdout.write(line)
    sys.stdout.flush()
    if args.exit_code and rank == args.exit_rank % size:
        sys.exit(args.exit_code)


main()
