"""Randomized differential test: seeded random sequences of collectives (kind, op, dtype, shape,
root, splits, scale factors), submitted asynchronously in a different random order on each
rank, compared against a numpy reference computed from every rank's inputs. Each sequence runs
twice under the same names, with new inputs: the second time every collective is a repeat and
runs from the response cache.

Inputs are small integers, so every sum and product is exact in every dtype and the reference
can demand bit-for-bit equality; averaging and scaling are reproduced in the dtype's own
arithmetic, the way the core does them. Run longer with MPIREP_DIFFERENTIAL_SEQUENCES=10000
(and MPIREP_DIFFERENTIAL_SEED to vary the draw).
"""
import hashlib
import os

import ml_dtypes
import numpy as np

import mpirep
from mpirep._core_loader import core
from ranks import add_to_digest, assert_same_digest_across_ranks, check_comm

SEQUENCES = int(os.environ.get("MPIREP_DIFFERENTIAL_SEQUENCES", "40"))
SEED = int(os.environ.get("MPIREP_DIFFERENTIAL_SEED", "20261129"))
OPS_PER_SEQUENCE = 12
KINDS = ["allreduce", "allreduce", "allgather", "broadcast", "reducescatter", "alltoall"]
NUMERIC = [np.dtype(t) for t in (np.uint8, np.int8, np.uint16, np.int16, np.int32, np.int64,
                                 np.float16, ml_dtypes.bfloat16, np.float32, np.float64)]
BOOL = np.dtype(bool)
FLOATS = {np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16), np.dtype(np.float32), np.dtype(np.float64)}


def draw_op(rng, n):
    """One collective, described the same on every rank (all drawn from the shared rng)."""
    kind = KINDS[rng.integers(len(KINDS))]
    dtype = BOOL if kind != "reducescatter" and rng.random() < 0.1 else NUMERIC[rng.integers(len(NUMERIC))]
    ops = ["Min", "Max", "Product"] if dtype == BOOL else ["Sum", "Average", "Min", "Max", "Product"]
    rest = tuple(int(d) for d in rng.integers(1, 4, size=rng.integers(0, 3)))
    big = rng.random() < 0.1  # long enough for several ring chunks and uneven segments
    spec = {"kind": kind, "dtype": dtype, "op": ops[rng.integers(len(ops))], "rest": rest,
            "prescale": 1.0, "postscale": 1.0}
    if dtype in FLOATS and kind == "allreduce" and rng.random() < 0.3:
        spec["prescale"], spec["postscale"] = (float(rng.choice([0.5, 2.0])), float(rng.choice([0.5, 2.0])))
    if kind in ("allreduce", "broadcast"):
        spec["shape"] = (100003,) + rest if big else (rest if rng.random() < 0.8 else ())
        spec["root"] = int(rng.integers(n))
    elif kind == "allgather":
        spec["rows"] = [int(r) for r in rng.integers(0, 4, size=n)]
    elif kind == "reducescatter":
        spec["shape"] = (int(rng.integers(0, 3 * n + 2)),) + rest
    else:
        spec["splits"] = rng.integers(0, 3, size=(n, n)).tolist()  # row i: what rank i sends
    return spec


def rank_input(spec, seq, index, rank, shape, repeat):
    rng = np.random.default_rng([SEED, seq, index, rank, repeat])
    if spec["dtype"] == BOOL:
        return rng.random(shape) < 0.5
    low, high = (1, 3) if spec.get("op") == "Product" else (0, 9)
    values = rng.integers(low, high, size=shape)
    if spec["dtype"].kind in "fiV":  # signed types ("V": bfloat16) get negative values too
        values = values * rng.choice([-1, 1], size=shape)
    return values.astype(spec["dtype"])


def scale(values, factor, dtype):
    """values * factor as the core computes it: in the dtype (half types via float32)."""
    wide = np.float64 if dtype == np.dtype(np.float64) else np.float32
    return (values.astype(wide) * wide(factor)).astype(dtype)


def reduce_reference(spec, inputs, n):
    dtype, op = spec["dtype"], spec["op"]
    if dtype == BOOL:
        stacked = np.stack(inputs)
        return stacked.any(axis=0) if op == "Max" else stacked.all(axis=0)
    stacked = np.stack([scale(x, spec["prescale"], dtype) for x in inputs]).astype(np.float64)
    if op in ("Sum", "Average"):
        exact = stacked.sum(axis=0)
    elif op == "Min":
        exact = stacked.min(axis=0)
    elif op == "Max":
        exact = stacked.max(axis=0)
    else:
        exact = stacked.prod(axis=0)
    if op == "Average" and dtype not in FLOATS:
        return (np.floor_divide(exact.astype(np.int64), n)).astype(dtype)
    if dtype not in FLOATS:
        return exact.astype(np.int64).astype(dtype)  # wraps like the core for unsigned types
    factor = spec["postscale"] / n if op == "Average" else spec["postscale"]
    summed = exact.astype(dtype)
    return summed if factor == 1.0 else scale(summed, factor, dtype)


def submit_and_expect(spec, seq, index, rank, n, repeat):
    """(handle factory, expected result) for this rank."""
    name = f"diff.{seq}.{index}"
    kind = spec["kind"]
    if kind == "allreduce":
        inputs = [rank_input(spec, seq, index, r, spec["shape"], repeat) for r in range(n)]
        expected = reduce_reference(spec, inputs, n)
        return (lambda: mpirep.allreduce_async(inputs[rank], op=spec["op"], name=name,
                                               prescale_factor=spec["prescale"],
                                               postscale_factor=spec["postscale"])), expected
    if kind == "broadcast":
        inputs = [rank_input(spec, seq, index, r, spec["shape"], repeat) for r in range(n)]
        return (lambda: mpirep.broadcast_async(inputs[rank], spec["root"], name=name)), inputs[spec["root"]]
    if kind == "allgather":
        inputs = [rank_input(spec, seq, index, r, (rows,) + spec["rest"], repeat) for r, rows in enumerate(spec["rows"])]
        return (lambda: mpirep.allgather_async(inputs[rank], name=name)), np.concatenate(inputs)
    if kind == "reducescatter":
        inputs = [rank_input(spec, seq, index, r, spec["shape"], repeat) for r in range(n)]
        full = reduce_reference(spec, inputs, n)
        counts = [spec["shape"][0] // n + (1 if r < spec["shape"][0] % n else 0) for r in range(n)]
        start = sum(counts[:rank])
        return (lambda: mpirep.reducescatter_async(inputs[rank], op=spec["op"], name=name)), \
            full[start:start + counts[rank]]
    splits = spec["splits"]
    inputs = [rank_input(spec, seq, index, r, (sum(splits[r]),) + spec["rest"], repeat) for r in range(n)]
    pieces = [inputs[src][sum(splits[src][:rank]):sum(splits[src][:rank + 1])] for src in range(n)]
    return (lambda: mpirep.alltoall_async(inputs[rank], splits=splits[rank], name=name)), \
        (np.concatenate(pieces), np.array([splits[src][rank] for src in range(n)]))


def assert_matches(result, expected, what):
    if isinstance(expected, tuple):
        assert_matches(result[0], expected[0], what)
        np.testing.assert_array_equal(result[1], expected[1], err_msg=f"{what}: received splits")
        return
    assert result.dtype == expected.dtype and result.shape == expected.shape, \
        f"{what}: got {result.dtype}{result.shape}, expected {expected.dtype}{expected.shape}"
    assert result.tobytes() == expected.tobytes(), f"{what}: values differ\n{result}\n!=\n{expected}"


def test_random_sequences_match_numpy():
    n, rank = mpirep.size(), mpirep.rank()
    mismatches, checked, wrong_hits, cached_passes = [], 0, [], 0
    comm = check_comm()
    results = hashlib.sha256()  # a digest, not the arrays: long runs would not fit in memory
    for seq in range(SEQUENCES):
        shared = np.random.default_rng([SEED, seq])
        specs = [draw_op(shared, n) for _ in range(OPS_PER_SEQUENCE)]
        for repeat in range(2):
            # Ranks start each pass together: a cached tensor that some rank has not submitted a
            # second after the others goes back through rank 0 (round_leader.cc, kDemoteAfter), and
            # checking the previous pass can take a loaded rank that long.
            comm.Barrier()
            cached = core().negotiation_stats()["cached_tensors"]
            plans = [submit_and_expect(spec, seq, i, rank, n, repeat) for i, spec in enumerate(specs)]
            order = np.random.default_rng([SEED, seq, 1000 + rank, repeat]).permutation(len(plans))
            handles = {i: plans[i][0]() for i in order}
            for i, spec in enumerate(specs):
                result = mpirep.synchronize(handles[i])
                try:
                    assert_matches(result, plans[i][1], f"sequence {seq} pass {repeat} op {i} {spec}")
                except AssertionError as e:
                    mismatches.append(str(e))
                if spec["kind"] in ("allreduce", "broadcast", "allgather"):  # the same on every rank
                    add_to_digest(results, result)
                checked += 1
            hits = core().negotiation_stats()["cached_tensors"] - cached
            if repeat == 0 and hits:
                wrong_hits.append(f"sequence {seq} pass 0: {hits} new tensors ran from the cache")
            cached_passes += repeat == 1 and hits == len(specs)
    assert not mismatches, f"{len(mismatches)} of {checked} collectives differ from numpy:\n" + \
        "\n".join(mismatches[:5])
    assert not wrong_hits, "\n".join(wrong_hits[:5])
    # A repeated pass runs from the cache, unless some rank brings a tensor over a second after
    # the others (then rank 0 demotes it: round_leader.cc, kDemoteAfter), which descheduling on a
    # loaded machine can cause. Most passes must have run from the cache, so both paths were
    # checked against numpy.
    assert cached_passes >= SEQUENCES // 2, \
        f"only {cached_passes} of {SEQUENCES} repeated passes ran wholly from the cache"
    assert_same_digest_across_ranks(results)
