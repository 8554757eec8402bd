"""broadcast from every root: every rank ends with the root's array."""
import numpy as np
import pytest

import mpirep
from expect import ALL_DTYPES, dtype_id, pattern
from ranks import assert_identical_across_ranks

SHAPES = [(), (0,), (1,), (5,), (3, 4), (2, 0, 3), (100003,)]


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=dtype_id)
def test_broadcast_every_root(dtype):
    n, rank = mpirep.size(), mpirep.rank()
    cases = [(root, shape) for root in range(n) for shape in SHAPES]
    inputs = [pattern(rank, shape, dtype) for _, shape in cases]
    results = [mpirep.broadcast(x, root_rank=root) for (root, _), x in zip(cases, inputs)]
    for (root, shape), x, result in zip(cases, inputs, results):
        np.testing.assert_array_equal(result, pattern(root, shape, dtype), strict=True,
                                      err_msg=f"root {root}, shape {shape}")
        np.testing.assert_array_equal(x, pattern(rank, shape, dtype), strict=True,
                                      err_msg="input was modified")
    assert_identical_across_ranks(results)


def test_broadcast_non_contiguous():
    n, rank = mpirep.size(), mpirep.rank()
    dtype = np.dtype(np.int64)
    root = n - 1
    result = mpirep.broadcast(pattern(rank, (7, 5), dtype).T, root_rank=root)
    np.testing.assert_array_equal(result, pattern(root, (7, 5), dtype).T, strict=True)
