"""Rank- and index-dependent inputs, and what each collective must return for them.

Reduction inputs are built so that every op has a closed form in the rank count n, with values
small enough to be exact in every dtype (float16 and bfloat16 included) and in int8:
  k = idx % 7 + 1, sign = -1 where idx % 3 == 1 (signed dtypes only), else +1
  Sum/Average/Min/Max input on rank r: sign * (r + 1) * k
      Sum = sign * k * n(n+1)/2        Average = Sum / n (floor division for integers)
      Max = k * n or -k                Min = k or -k * n
  Product input: rank idx % n holds sign * (idx % 3 + 1), rank (idx + 1) % n holds 2, others 1
      Product = sign * (idx % 3 + 1) * (2 if n > 1 else 1)
  bool: Min and Product (logical and) get  r != idx % (n + 1)  ->  idx % (n + 1) == n
        Max (logical or) gets              r == idx % (n + 1)  ->  idx % (n + 1) <  n
"""
import ml_dtypes
import numpy as np

import mpirep

BFLOAT16 = np.dtype(ml_dtypes.bfloat16)
INTEGER = [np.dtype(t) for t in (np.uint8, np.int8, np.uint16, np.int16, np.int32, np.int64)]
FLOATING = [np.dtype(t) for t in (np.float16, BFLOAT16, np.float32, np.float64)]
BOOL = np.dtype(np.bool_)
NUMERIC = INTEGER + FLOATING
ALL_DTYPES = NUMERIC + [BOOL]
OPS = {"Sum": mpirep.Sum, "Average": mpirep.Average, "Min": mpirep.Min, "Max": mpirep.Max,
       "Product": mpirep.Product}
BOOL_OPS = ["Min", "Max", "Product"]


def dtype_id(dtype):
    return "bfloat16" if dtype == BFLOAT16 else dtype.name


def is_signed(dtype):
    return dtype.kind == "i" or dtype.kind == "f" or dtype == BFLOAT16


def _index_terms(shape, dtype):
    idx = np.arange(int(np.prod(shape, dtype=np.int64)), dtype=np.int64).reshape(shape)
    k = idx % 7 + 1
    sign = np.where((idx % 3 == 1) & is_signed(dtype), -1, 1)
    return idx, k, sign


def reduce_input(op, rank, n, shape, dtype):
    """This rank's input for an allreduce/reducescatter with `op` over n ranks."""
    idx, k, sign = _index_terms(shape, dtype)
    if dtype == BOOL:
        hit = rank == idx % (n + 1)
        return (hit if op == "Max" else ~hit).astype(BOOL)
    if op == "Product":
        x = np.ones(shape, dtype=np.int64)
        x = np.where(rank == (idx + 1) % n, 2, x)
        x = np.where(rank == idx % n, sign * (idx % 3 + 1), x)
    else:
        x = sign * (rank + 1) * k
    return x.astype(dtype)


def reduce_expected(op, n, shape, dtype):
    """The reduction over all n ranks, as float64 (or bool / int64 for those dtypes)."""
    idx, k, sign = _index_terms(shape, dtype)
    if dtype == BOOL:
        return (idx % (n + 1) < n) if op == "Max" else (idx % (n + 1) == n)
    total = sign * k * (n * (n + 1) // 2)
    if op == "Sum":
        return total
    if op == "Average":
        return total // n if dtype in INTEGER else total / n
    if op == "Max":
        return np.where(sign > 0, k * n, -k)
    if op == "Min":
        return np.where(sign > 0, k, -k * n)
    return sign * (idx % 3 + 1) * (2 if n > 1 else 1)


def assert_reduced(result, op, n, shape, dtype, expected=None, what=""):
    expected = reduce_expected(op, n, shape, dtype) if expected is None else expected
    assert result.dtype == dtype, f"{what}: dtype {result.dtype} != {dtype}"
    assert result.shape == tuple(shape), f"{what}: shape {result.shape} != {tuple(shape)}"
    if op == "Average" and dtype in FLOATING:
        # Averaging may divide or multiply by 1/n: allow one rounding of the dtype.
        rtol = float(ml_dtypes.finfo(dtype).eps)
        np.testing.assert_allclose(result.astype(np.float64), expected, rtol=rtol, atol=0,
                                   err_msg=what)
    else:
        np.testing.assert_array_equal(result.astype(np.float64) if dtype in FLOATING else result,
                                      expected, err_msg=what, strict=False)


def pattern(seed, shape, dtype):
    """Distinct small values keyed by `seed` (a rank, a (src, dst) pair code, ...)."""
    count = int(np.prod(shape, dtype=np.int64))
    v = (seed * 31 + np.arange(count, dtype=np.int64) * 7) % 97
    if dtype == BOOL:
        v = v % 2
    elif is_signed(dtype):
        v = v - 48
    return v.reshape(shape).astype(dtype)
