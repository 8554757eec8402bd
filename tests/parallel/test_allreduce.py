"""allreduce and grouped_allreduce: every op x dtype x shape against the closed forms."""
import numpy as np
import pytest

import mpirep
from expect import (ALL_DTYPES, BOOL, BOOL_OPS, FLOATING, OPS, assert_reduced, dtype_id,
                    reduce_expected, reduce_input)
from ranks import assert_identical_across_ranks

# 0-d, empty, fewer elements than ranks, odd counts (uneven ring segments), and sizeable ones.
SHAPES = [(), (0,), (1,), (2,), (3,), (5,), (7, 3), (4, 0, 2), (1001,), (3, 5, 11), (100003,)]

CASES = [(op, dtype) for dtype in ALL_DTYPES for op in (BOOL_OPS if dtype == BOOL else OPS)]


@pytest.mark.parametrize("op,dtype", CASES, ids=[f"{o}-{dtype_id(d)}" for o, d in CASES])
def test_allreduce_every_shape(op, dtype):
    n, rank = mpirep.size(), mpirep.rank()
    inputs = [reduce_input(op, rank, n, shape, dtype) for shape in SHAPES]
    before = [x.copy() for x in inputs]
    results = [mpirep.allreduce(x, op=OPS[op]) for x in inputs]
    for shape, x, x0, result in zip(SHAPES, inputs, before, results):
        assert_reduced(result, op, n, shape, dtype, what=f"shape {shape}")
        np.testing.assert_array_equal(x, x0, err_msg="input was modified")
    assert_identical_across_ranks(results)


SCALED = [  # op, prescale, postscale, expected in terms of an unscaled closed form
    ("Sum", 0.5, 4.0, lambda e: 2 * e["Sum"]),
    ("Average", 0.5, 4.0, lambda e: 2 * e["Average"]),
    ("Sum", 1.0, -0.25, lambda e: -0.25 * e["Sum"]),
    ("Min", -1.0, 2.0, lambda e: -2 * e["Max"]),
    ("Max", 2.0, 1.0, lambda e: 2 * e["Max"]),
]


@pytest.mark.parametrize("dtype", FLOATING, ids=dtype_id)
@pytest.mark.parametrize("op,pre,post,expect", SCALED, ids=[f"{c[0]}-{c[1]}-{c[2]}" for c in SCALED])
def test_prescale_and_postscale(op, pre, post, expect, dtype):
    n, rank = mpirep.size(), mpirep.rank()
    shape = (3, 37)
    result = mpirep.allreduce(reduce_input(op, rank, n, shape, dtype), op=OPS[op],
                              prescale_factor=pre, postscale_factor=post)
    unscaled = {name: reduce_expected(name, n, shape, dtype) for name in ("Sum", "Average", "Max")}
    assert_reduced(result, op, n, shape, dtype, expected=expect(unscaled))
    assert_identical_across_ranks([result])


@pytest.mark.parametrize("dtype", [np.dtype(np.int16), np.dtype(np.float32)], ids=dtype_id)
def test_non_contiguous_input(dtype):
    n, rank = mpirep.size(), mpirep.rank()
    full = reduce_input("Sum", rank, n, (10, 6), dtype)
    expected = reduce_expected("Sum", n, (10, 6), dtype)
    strided = mpirep.allreduce(full[:, ::2], op=mpirep.Sum)
    transposed = mpirep.allreduce(full.T, op=mpirep.Sum)
    assert_reduced(strided, "Sum", n, (10, 3), dtype, expected=expected[:, ::2])
    assert_reduced(transposed, "Sum", n, (6, 10), dtype, expected=expected.T)


@pytest.mark.parametrize("dtype", [np.dtype(np.int32), np.dtype(np.float32), np.dtype(np.float16)],
                         ids=dtype_id)
@pytest.mark.parametrize("op", ["Sum", "Average", "Max"])
def test_grouped_allreduce(op, dtype):
    n, rank = mpirep.size(), mpirep.rank()
    shapes = [(5,), (), (0,), (3, 4), (257,)]
    results = mpirep.grouped_allreduce([reduce_input(op, rank, n, s, dtype) for s in shapes],
                                       op=OPS[op])
    assert isinstance(results, list) and len(results) == len(shapes)
    for shape, result in zip(shapes, results):
        assert_reduced(result, op, n, shape, dtype, what=f"shape {shape}")
    assert_identical_across_ranks(results)


def test_grouped_allreduce_mixed_dtypes():
    n, rank = mpirep.size(), mpirep.rank()
    cases = [((6,), np.dtype(np.float32)), ((2, 3), np.dtype(np.int8)), ((5,), np.dtype(np.float64))]
    results = mpirep.grouped_allreduce([reduce_input("Sum", rank, n, s, d) for s, d in cases],
                                       op=mpirep.Sum)
    for (shape, dtype), result in zip(cases, results):
        assert_reduced(result, "Sum", n, shape, dtype, what=f"{dtype} {shape}")


def test_grouped_allreduce_scales():
    n, rank = mpirep.size(), mpirep.rank()
    shapes = [(4,), (9, 2)]
    dtype = np.dtype(np.float64)
    results = mpirep.grouped_allreduce([reduce_input("Sum", rank, n, s, dtype) for s in shapes],
                                       op=mpirep.Sum, prescale_factor=0.5, postscale_factor=8.0)
    for shape, result in zip(shapes, results):
        assert_reduced(result, "Sum", n, shape, dtype,
                       expected=4 * reduce_expected("Sum", n, shape, dtype))


def test_default_op_is_average():
    n, rank = mpirep.size(), mpirep.rank()
    dtype = np.dtype(np.float64)
    result = mpirep.allreduce(reduce_input("Average", rank, n, (11,), dtype))
    assert_reduced(result, "Average", n, (11,), dtype)
