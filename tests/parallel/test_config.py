"""Correct results under configurations that force many fusion batches and many ring chunks."""
import os
from unittest import mock

import numpy as np
import pytest

import mpirep
from expect import ALL_DTYPES, BOOL, BOOL_OPS, OPS, assert_reduced, dtype_id, pattern, reduce_input
from lifecycle import reinitialized
from ranks import assert_identical_across_ranks

CONFIGS = {
    "fusion_64B": {"fusion_threshold": 64},
    "fusion_1KiB_chunk_64B": {"fusion_threshold": 1024, "chunk_bytes": 64},
    "chunk_72B_cycle_1ms": {"chunk_bytes": 72, "cycle_time_ms": 1},  # 72: 9 float64, 36 float16
    # one host: reduce-scatter among all ranks, a ring of one host, allgather (the hosts' path)
    "hierarchical_chunk_64B": {"hierarchical_allreduce": 1, "fusion_threshold": 1024, "chunk_bytes": 64},
}
SIZES = [0, 1, 2, 3, 5, 17, 31, 100, 1001, 4099]


def run_mixed_batch(n, rank):
    """Submit a batch of every dtype and size at once, then check every result."""
    cases = []
    for dtype in ALL_DTYPES:
        for op in (BOOL_OPS if dtype == BOOL else ["Sum", "Average", "Min", "Product"]):
            cases += [(dtype, op, size) for size in SIZES]
    handles = [mpirep.allreduce_async(reduce_input(op, rank, n, (size,), dtype), op=OPS[op],
                                      name=f"batch.{dtype_id(dtype)}.{op}.{size}")
               for dtype, op, size in cases]
    gathers = [mpirep.allgather_async(pattern(rank, (size + rank, 2), dtype))
               for dtype in ALL_DTYPES for size in (1, 33)]
    results = [mpirep.synchronize(h) for h in handles]
    gathered = [mpirep.synchronize(h) for h in gathers]
    for (dtype, op, size), result in zip(cases, results):
        assert_reduced(result, op, n, (size,), dtype, what=f"{dtype_id(dtype)} {op} {size}")
    for (dtype, size), result in zip([(d, s) for d in ALL_DTYPES for s in (1, 33)], gathered):
        expected = np.concatenate([pattern(r, (size + r, 2), dtype) for r in range(n)])
        np.testing.assert_array_equal(result, expected, strict=True)
    assert_identical_across_ranks(results + gathered)


@pytest.mark.parametrize("name", list(CONFIGS))
def test_batches_and_chunks(name):
    with reinitialized(**CONFIGS[name]):
        run_mixed_batch(mpirep.size(), mpirep.rank())


@pytest.mark.parametrize("prefix", ["MPIREP", "HOROVOD"])
def test_environment_configuration(prefix):
    env = {f"{prefix}_FUSION_THRESHOLD": "128", f"{prefix}_CYCLE_TIME": "1"}
    with mock.patch.dict(os.environ, env), reinitialized():
        settings = mpirep.session.config()
        assert (settings.fusion_threshold, settings.cycle_time_ms) == (128, 1.0)
        run_mixed_batch(mpirep.size(), mpirep.rank())


def test_large_multi_chunk_allreduce():
    n, rank = mpirep.size(), mpirep.rank()
    dtype = np.dtype(np.float32)
    shape = (3 * 1024 * 1024 + 7,)  # 12 MiB, an odd count
    with reinitialized(chunk_bytes=256 * 1024):
        result = mpirep.allreduce(reduce_input("Sum", rank, n, shape, dtype), op=mpirep.Sum)
    assert_reduced(result, "Sum", n, shape, dtype)
    assert_identical_across_ranks([result])
