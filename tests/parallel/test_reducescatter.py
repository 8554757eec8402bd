"""reducescatter: rank r gets its contiguous block of rows of the reduction; the first
dim0 % size ranks get one row more."""
import numpy as np
import pytest

import mpirep
from expect import (ALL_DTYPES, BOOL, BOOL_OPS, INTEGER, NUMERIC, OPS, assert_reduced, dtype_id,
                    reduce_expected, reduce_input)

SHAPES = [(0,), (1,), (2,), (3,), (5, 2), (7,), (13, 3), (4, 2, 2), (10007,)]
CASES = [(op, dtype) for dtype in ALL_DTYPES for op in (BOOL_OPS if dtype == BOOL else OPS)]


def block(rank, n, rows):
    """The rows [start, stop) that `rank` receives out of `rows`."""
    base, extra = divmod(rows, n)
    start = rank * base + min(rank, extra)
    return start, start + base + (1 if rank < extra else 0)


@pytest.mark.parametrize("op,dtype", CASES, ids=[f"{o}-{dtype_id(d)}" for o, d in CASES])
def test_reducescatter(op, dtype):
    n, rank = mpirep.size(), mpirep.rank()
    results = [mpirep.reducescatter(reduce_input(op, rank, n, shape, dtype), op=OPS[op])
               for shape in SHAPES]
    for shape, result in zip(SHAPES, results):
        start, stop = block(rank, n, shape[0])
        expected = reduce_expected(op, n, shape, dtype)[start:stop]
        assert_reduced(result, op, n, (stop - start,) + shape[1:], dtype, expected=expected,
                       what=f"shape {shape}")


SCALED = [(op, dtype) for dtype in NUMERIC for op in ("Sum", "Average")]


def scaled_expected(op, n, shape, dtype):
    """The reduction with prescale 1.5 and postscale 0.5, applied by the core in double: integer
    inputs and results are truncated toward zero after each scaling, integer Average is the
    floor of the mean. The factors keep every value exact in every dtype."""
    integer = dtype in INTEGER
    scaled = [reduce_input(op, r, n, shape, dtype).astype(np.float64) * 1.5 for r in range(n)]
    total = sum(np.trunc(x) if integer else x for x in scaled)
    if op == "Average":
        total = np.floor(total / n) if integer else total / n
    return np.trunc(total * 0.5) if integer else total * 0.5


@pytest.mark.parametrize("op,dtype", SCALED, ids=[f"{o}-{dtype_id(d)}" for o, d in SCALED])
def test_reducescatter_scale_factors(op, dtype):
    n, rank = mpirep.size(), mpirep.rank()
    shapes = [(1,), (7,), (2 * n + 1, 3)]
    handles = [mpirep.reducescatter_async(reduce_input(op, rank, n, shape, dtype), op=OPS[op],
                                          prescale_factor=1.5, postscale_factor=0.5)
               for shape in shapes]
    results = [mpirep.synchronize(h) for h in handles]
    for shape, result in zip(shapes, results):
        start, stop = block(rank, n, shape[0])
        expected = scaled_expected(op, n, shape, dtype)[start:stop]
        assert_reduced(result, op, n, (stop - start,) + shape[1:], dtype, expected=expected,
                       what=f"shape {shape}, prescale 1.5, postscale 0.5")
