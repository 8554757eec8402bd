"""Rank program of test_hierarchical.py, for 2 emulated hosts x 2 ranks: allreduce of every
dtype and op, fused and alone, then a joined rank and two process sets, once per mode given
(hierarchical_allreduce=1, =0, or "default": whatever the environment says), in one job.

Every result must equal a numpy reference (exactly for integers and for the exact float
inputs; within n roundings of the dtype for random floats) and be bit-identical on every
rank. Then a 16 MiB allreduce is timed against the bytes each host's eth0 sent meanwhile
(its network namespace's counter), and rank 0 prints one line per mode:

  MODE <mode> results=<count> digest=<sha256 of the exact results> across=<host1>,<host2>

where across is each host's sent bytes divided by the buffer's (1.5 for a flat ring, 1 for
the hierarchical one). Start it as `python -m mpi4py`, so that a failed check ends the job.
"""
import hashlib
import sys
from pathlib import Path

import ml_dtypes
import numpy as np
from mpi4py import MPI

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "parallel"))
import mpirep  # noqa: E402
from expect import (ALL_DTYPES, BOOL, BOOL_OPS, FLOATING, OPS, assert_reduced, dtype_id,  # noqa: E402
                    reduce_input)

SIZES = [0, 1, 3, 1001, 20_001]  # with 4 KiB chunks the last runs alone, in many chunks
CHUNK_BYTES = 4096
PROBE_BYTES = 16 << 20
COMM = MPI.COMM_WORLD


def same_on_every_rank(digest, what):
    digests = COMM.allgather(digest)
    differing = [r for r, d in enumerate(digests) if d != digests[0]]
    assert not differing, f"{what}: rank(s) {differing} differ from rank 0"


def random_floats(rank, size, dtype):
    return np.random.default_rng([rank, size]).standard_normal(size).astype(dtype)


def check_exact_cases(n, rank, digest):
    """Every dtype and op on the closed-form inputs of tests/parallel, submitted together."""
    cases = [(dtype, op, size) for dtype in ALL_DTYPES
             for op in (BOOL_OPS if dtype == BOOL else list(OPS)) for size in SIZES]
    handles = [mpirep.allreduce_async(reduce_input(op, rank, n, (size,), dtype), op=OPS[op],
                                      name=f"exact.{dtype_id(dtype)}.{op}.{size}")
               for dtype, op, size in cases]
    for (dtype, op, size), handle in zip(cases, handles):
        result = mpirep.synchronize(handle)
        assert_reduced(result, op, n, (size,), dtype, what=f"{dtype_id(dtype)} {op} {size}")
        digest.update(result.tobytes())
    return len(cases)


def check_random_floats(n, rank, digest):
    """Random floats, prescaled and postscaled: within n roundings of a float64 reference."""
    count = 0
    for dtype in FLOATING:
        for size in SIZES:
            got = mpirep.allreduce(random_floats(rank, size, dtype), op=mpirep.Sum,
                                   prescale_factor=3.0, postscale_factor=0.25,
                                   name=f"random.{dtype_id(dtype)}.{size}")
            inputs = np.stack([random_floats(r, size, dtype).astype(np.float64) for r in range(n)])
            expected = inputs.sum(axis=0) * 0.75
            tolerance = 2 * n * float(ml_dtypes.finfo(dtype).eps) * np.abs(inputs).sum(axis=0) * 0.75
            error = np.abs(got.astype(np.float64) - expected)
            assert np.all(error <= tolerance), (
                f"random {dtype_id(dtype)} {size}: largest error {error.max()} past {tolerance.max()}")
            digest.update(got.tobytes())
            count += 1
    return count


def check_joined_rank(n, rank):
    """The last rank joins at once; the others' Average still divides by n."""
    if rank == n - 1:
        mpirep.join()
        return
    x = np.arange(5001, dtype=np.int64) * (rank + 1) - rank
    got = mpirep.allreduce(x, op=mpirep.Average, name="joined")
    weights = sum(r + 1 for r in range(n - 1))
    np.testing.assert_array_equal(got, (np.arange(5001) * weights - sum(range(n - 1))) // n)
    mpirep.join()


def check_process_sets(rank):
    """One rank on each host (grouped, one rank per host), and 2 + 1 (uneven: the flat ring)."""
    for members in ([1, 3], [0, 1, 3]):
        process_set = mpirep.add_process_set(members)
        if rank in members:
            x = np.arange(7001, dtype=np.int32) * (rank + 1)
            got = mpirep.allreduce(x, op=mpirep.Sum, process_set=process_set, name=f"set.{members}")
            np.testing.assert_array_equal(got, np.arange(7001, dtype=np.int32) * sum(r + 1 for r in members))
        mpirep.remove_process_set(process_set)


def eth0_sent_bytes():
    for line in Path("/proc/net/dev").read_text().splitlines():
        name, _, counters = line.partition(":")
        if name.strip() == "eth0":
            return int(counters.split()[8])
    raise RuntimeError("no eth0 in this network namespace: not on an emulated host")


def bytes_across_per_host(rank):
    """Each host's eth0 bytes sent during one PROBE_BYTES allreduce, over PROBE_BYTES."""
    x = np.full(PROBE_BYTES // 4, rank + 1, np.float32)
    mpirep.allreduce(x[:1024], op=mpirep.Sum, name="probe.warmup")
    COMM.Barrier()
    before = eth0_sent_bytes()
    got = mpirep.allreduce(x, op=mpirep.Sum, name="probe")
    COMM.Barrier()
    sent = eth0_sent_bytes() - before
    assert np.all(got == sum(range(1, COMM.size + 1)))
    return [s / PROBE_BYTES for s in COMM.allgather(sent if mpirep.local_rank() == 0 else None)
            if s is not None]


def main():
    for mode in sys.argv[1:]:
        settings = {} if mode == "default" else {"hierarchical_allreduce": int(mode)}
        mpirep.init(chunk_bytes=CHUNK_BYTES, **settings)
        n, rank = mpirep.size(), mpirep.rank()
        assert (n, mpirep.local_size()) == (4, 2), "run on 2 hosts x 2 ranks"
        digest = hashlib.sha256()
        count = check_exact_cases(n, rank, digest)
        exact = digest.hexdigest()
        count += check_random_floats(n, rank, digest)
        same_on_every_rank(digest.hexdigest(), f"mode {mode}")
        check_joined_rank(n, rank)
        check_process_sets(rank)
        across = bytes_across_per_host(rank)
        if rank == 0:
            print(f"MODE {mode} results={count} digest={exact} "
                  f"across={','.join(f'{a:.3f}' for a in across)}", flush=True)
        mpirep.shutdown()


if __name__ == "__main__":
    main()
