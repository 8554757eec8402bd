"""reducescatter: rank r gets its contiguous block of rows of the reduction; the first
dim0 % size ranks get one row more."""
import pytest

import mpirep
from expect import (ALL_DTYPES, BOOL, BOOL_OPS, OPS, assert_reduced, dtype_id, reduce_expected,
                    reduce_input)

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
