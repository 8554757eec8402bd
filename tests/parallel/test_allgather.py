"""allgather: rank blocks concatenated along dim 0 in rank order; dim 0 may differ per rank."""
import numpy as np
import pytest

import mpirep
from expect import ALL_DTYPES, dtype_id, pattern
from ranks import assert_identical_across_ranks

ROWS = {  # rows that rank r contributes
    "equal": lambda r: 3,
    "growing": lambda r: r + 1,
    "odd_ranks_empty": lambda r: 0 if r % 2 else 2,
    "all_empty": lambda r: 0,
    "one_row": lambda r: 1,
}
TAILS = [(), (4,), (2, 3)]


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=dtype_id)
def test_allgather(dtype):
    n, rank = mpirep.size(), mpirep.rank()
    cases = [(rows, tail) for rows in ROWS for tail in TAILS]
    results = [mpirep.allgather(pattern(rank, (ROWS[rows](rank),) + tail, dtype)) for rows, tail in cases]
    for (rows, tail), result in zip(cases, results):
        expected = np.concatenate([pattern(r, (ROWS[rows](r),) + tail, dtype) for r in range(n)])
        assert result.dtype == dtype
        np.testing.assert_array_equal(result, expected, err_msg=f"{rows} rows, tail {tail}",
                                      strict=True)
    assert_identical_across_ranks(results)


def test_allgather_large_and_non_contiguous():
    n, rank = mpirep.size(), mpirep.rank()
    dtype = np.dtype(np.float32)
    big = mpirep.allgather(pattern(rank, (20011 + rank, 3), dtype))
    np.testing.assert_array_equal(
        big, np.concatenate([pattern(r, (20011 + r, 3), dtype) for r in range(n)]), strict=True)
    strided = mpirep.allgather(pattern(rank, (6, 4), dtype)[::2, 1:])
    np.testing.assert_array_equal(
        strided, np.concatenate([pattern(r, (6, 4), dtype)[::2, 1:] for r in range(n)]), strict=True)
