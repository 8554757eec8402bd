"""alltoall: block j of rank r's input goes to rank j; received blocks are concatenated in
source order. With splits, the received split sizes come back too."""
import numpy as np
import pytest

import mpirep
from expect import ALL_DTYPES, dtype_id, pattern

TAILS = [(), (3,), (2, 2)]


def piece(src, dst, rows, tail, dtype):
    return pattern(src * 64 + dst, (rows,) + tail, dtype)


def send_splits(rank, n):
    return [(rank + 2 * dst) % 3 for dst in range(n)]


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=dtype_id)
def test_alltoall_even(dtype):
    n, rank = mpirep.size(), mpirep.rank()
    cases = [(rows, tail) for rows in (0, 1, 3) for tail in TAILS]
    results = []
    for rows, tail in cases:
        x = np.concatenate([piece(rank, dst, rows, tail, dtype) for dst in range(n)])
        results.append(mpirep.alltoall(x))
    for (rows, tail), result in zip(cases, results):
        expected = np.concatenate([piece(src, rank, rows, tail, dtype) for src in range(n)])
        np.testing.assert_array_equal(result, expected, strict=True,
                                      err_msg=f"{rows} rows per rank, tail {tail}")


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=dtype_id)
def test_alltoall_splits(dtype):
    n, rank = mpirep.size(), mpirep.rank()
    splits = send_splits(rank, n)
    for tail in TAILS:
        x = np.concatenate([piece(rank, dst, splits[dst], tail, dtype) for dst in range(n)])
        result, received = mpirep.alltoall(x, splits=splits)
        expected_splits = [send_splits(src, n)[rank] for src in range(n)]
        np.testing.assert_array_equal(np.asarray(received), expected_splits)
        expected = np.concatenate(
            [piece(src, rank, expected_splits[src], tail, dtype) for src in range(n)])
        np.testing.assert_array_equal(result, expected, strict=True, err_msg=f"tail {tail}")


def test_alltoall_splits_as_numpy_array():
    n, rank = mpirep.size(), mpirep.rank()
    dtype = np.dtype(np.int32)
    splits = np.array(send_splits(rank, n), dtype=np.int64)
    x = np.concatenate([piece(rank, dst, splits[dst], (), dtype) for dst in range(n)])
    result, received = mpirep.alltoall(x, splits=splits)
    expected_splits = [send_splits(src, n)[rank] for src in range(n)]
    np.testing.assert_array_equal(np.asarray(received), expected_splits)
    np.testing.assert_array_equal(
        result, np.concatenate([piece(s, rank, expected_splits[s], (), dtype) for s in range(n)]))
