"""reduce: the root gets the reduction of every rank's array, every other rank zeros of its
shape and dtype; a root outside the set fails on every rank with a message naming the rank."""
import numpy as np
import pytest

import mpirep
from expect import (ALL_DTYPES, BOOL, BOOL_OPS, INTEGER, OPS, assert_reduced, dtype_id,
                    reduce_input)
from test_errors import assert_next_collective_works

SHAPES = [(), (0,), (1,), (3,), (5, 2), (2 * 4 + 1, 3), (10007,)]
CASES = [(op, dtype) for dtype in ALL_DTYPES for op in (BOOL_OPS if dtype == BOOL else OPS)]


@pytest.mark.parametrize("op,dtype", CASES, ids=[f"{o}-{dtype_id(d)}" for o, d in CASES])
def test_reduce_onto_every_root(op, dtype):
    n, rank = mpirep.size(), mpirep.rank()
    cases = [(root, shape) for root in range(n) for shape in SHAPES]
    results = [mpirep.reduce(reduce_input(op, rank, n, shape, dtype), root_rank=root, op=OPS[op])
               for root, shape in cases]
    for (root, shape), result in zip(cases, results):
        if rank == root:
            assert_reduced(result, op, n, shape, dtype, what=f"root {root}, shape {shape}")
        else:
            np.testing.assert_array_equal(result, np.zeros(shape, dtype), strict=True,
                                          err_msg=f"root {root}, shape {shape}: not zeros")


@pytest.mark.parametrize("dtype", [np.dtype(np.int32), np.dtype(np.float64)], ids=dtype_id)
def test_reduce_scale_factors_async(dtype):
    """Prescale 3 and postscale 0.5, in double, truncated toward zero for integers."""
    n, rank = mpirep.size(), mpirep.rank()
    root = n - 1
    x = (np.arange(11) * (rank + 1) - 4 * rank).astype(dtype)
    handle = mpirep.reduce_async(x, root_rank=root, op=mpirep.Sum, prescale_factor=3.0,
                                 postscale_factor=0.5)
    result = mpirep.synchronize(handle)
    total = sum((np.arange(11) * (r + 1) - 4 * r) * 3.0 for r in range(n)) * 0.5
    expected = np.trunc(total) if dtype in INTEGER else total
    if rank == root:
        np.testing.assert_array_equal(result, expected.astype(dtype), strict=True)
    else:
        np.testing.assert_array_equal(result, np.zeros(11, dtype), strict=True)


@pytest.mark.parametrize("root", [-1, "size"])
def test_reduce_root_out_of_range(root):
    n = mpirep.size()
    root = n if root == "size" else root
    with pytest.raises(mpirep.InvalidArgumentError) as error:
        mpirep.reduce(np.zeros(3), root_rank=root)
    assert str(error.value).startswith(
        f"rank {mpirep.rank()}: root rank {root} is outside 0..{n - 1}"), error.value
    assert_next_collective_works(f"reduce_root{root}")


def test_reduce_mismatched_roots_fail_on_every_rank():
    if mpirep.size() == 1:
        pytest.skip("needs two ranks to disagree")
    rank = mpirep.rank()
    with pytest.raises(mpirep.MismatchError) as error:
        mpirep.reduce(np.zeros(4), root_rank=int(rank == 1), name="reduce_roots")
    assert "mismatched root ranks for tensor 'reduce_roots'" in str(error.value)
    assert_next_collective_works("reduce_roots_after")
