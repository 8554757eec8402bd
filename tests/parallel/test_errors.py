"""Errors: cross-rank mismatches fail on every rank and the next collective works; bad input on
one rank fails on that rank without a collective."""

import numpy as np
import pytest

import mpirep
from expect import assert_reduced, reduce_input
from ranks import check_comm


def differ(rank, first, rest):
    return first if rank == 0 else rest


# case -> (call made on `rank`, strings the error message must contain besides the name)
MISMATCHES = {
    "shape": (lambda rank, name: mpirep.allreduce(
        np.zeros(differ(rank, 1234, 4321), np.float32), name=name), ["1234", "4321"]),
    "dtype": (lambda rank, name: mpirep.allreduce(
        np.zeros(8, differ(rank, np.float32, np.int16)), name=name), ["float32", "int16"]),
    "op": (lambda rank, name: mpirep.allreduce(
        np.zeros(8), op=differ(rank, mpirep.Sum, mpirep.Max), name=name), ["Sum", "Max"]),
    "root": (lambda rank, name: mpirep.broadcast(
        np.zeros(8), root_rank=differ(rank, 0, 1), name=name), []),
    "prescale": (lambda rank, name: mpirep.allreduce(
        np.zeros(8), prescale_factor=differ(rank, 1.5, 2.5), name=name), ["1.5", "2.5"]),
    "postscale": (lambda rank, name: mpirep.allreduce(
        np.zeros(8), postscale_factor=differ(rank, 0.125, 0.375), name=name), ["0.125", "0.375"]),
    "collective": (lambda rank, name: differ(rank, mpirep.allreduce, mpirep.allgather)(
        np.zeros(8), name=name), ["allreduce", "allgather"]),
    "broadcast_shape": (lambda rank, name: mpirep.broadcast(
        np.zeros(differ(rank, 1234, 4321)), root_rank=0, name=name), ["1234", "4321"]),
    "allgather_tail": (lambda rank, name: mpirep.allgather(
        np.zeros((2, differ(rank, 3, 5))), name=name), []),
    "reducescatter_shape": (lambda rank, name: mpirep.reducescatter(
        np.zeros(differ(rank, 6, 7)), op=mpirep.Sum, name=name), []),
    "alltoall_dtype": (lambda rank, name: mpirep.alltoall(
        np.zeros(2 * mpirep.size(), differ(rank, np.int32, np.int64)), name=name), ["int32", "int64"]),
}


def assert_next_collective_works(tag):
    n, rank = mpirep.size(), mpirep.rank()
    dtype = np.dtype(np.int64)
    result = mpirep.allreduce(reduce_input("Sum", rank, n, (10,), dtype), op=mpirep.Sum,
                              name=f"after.{tag}")
    assert_reduced(result, "Sum", n, (10,), dtype)


@pytest.mark.parametrize("case", list(MISMATCHES))
def test_mismatch_fails_on_every_rank(case):
    n, rank = mpirep.size(), mpirep.rank()
    if n == 1:
        pytest.skip("a lone rank cannot disagree with itself")
    call, values = MISMATCHES[case]
    name = f"mismatch.{case}"
    with pytest.raises(mpirep.MismatchError) as info:  # a stall would be a StallError, or a hang
        call(rank, name)
    message = str(info.value)
    assert name in message
    for value in values:
        assert value in message, f"{value!r} not in {message!r}"
    assert_next_collective_works(case)


def test_mismatch_in_a_batch_spares_the_other_tensors():
    n, rank = mpirep.size(), mpirep.rank()
    if n == 1:
        pytest.skip("a lone rank cannot disagree with itself")
    dtype = np.dtype(np.float32)
    good = [mpirep.allreduce_async(reduce_input("Sum", rank, n, (i + 1,), dtype), op=mpirep.Sum,
                                   name=f"good.{i}") for i in range(10)]
    bad = mpirep.allreduce_async(np.zeros(5 + (rank == 0), dtype), name="bad")
    with pytest.raises(mpirep.MismatchError):
        mpirep.synchronize(bad)
    for i, handle in enumerate(good):
        assert_reduced(mpirep.synchronize(handle), "Sum", n, (i + 1,), dtype)


@pytest.mark.parametrize("root", [-1, "size"])
def test_root_out_of_range(root):
    root = mpirep.size() if root == "size" else root
    with pytest.raises(mpirep.InvalidArgumentError):
        mpirep.broadcast(np.zeros(3), root_rank=root)
    with pytest.raises(ValueError):
        mpirep.broadcast_async(np.zeros(3), root_rank=root)
    assert_next_collective_works(f"root{root}")


def bad_splits(n):
    return {
        "too_short": [1] * (n - 1),
        "too_long": [1] * (n + 1),
        "sum_too_small": [1] * (n - 1) + [0],
        "sum_too_large": [1] * (n - 1) + [2],
        "negative": [2] + [1] * (n - 2) + [-1] if n > 1 else [-1],
    }


@pytest.mark.parametrize("case", list(bad_splits(4)))
def test_bad_alltoall_splits(case):
    n = mpirep.size()
    splits = bad_splits(n)[case]
    if case == "too_short" and n == 1:
        splits = []
    with pytest.raises(mpirep.InvalidArgumentError):
        mpirep.alltoall(np.zeros(n), splits=splits)
    assert_next_collective_works(f"splits.{case}")


@pytest.mark.parametrize("collective", ["allgather", "reducescatter"])
def test_zero_dimensional_input_needs_a_first_dimension(collective):
    with pytest.raises(mpirep.InvalidArgumentError):
        getattr(mpirep, collective)(np.array(3.0))
    assert_next_collective_works(f"0d.{collective}")


def test_alltoall_without_splits_needs_divisible_rows():
    n = mpirep.size()
    if n == 1:
        pytest.skip("every row count divides by one")
    with pytest.raises(mpirep.InvalidArgumentError):
        mpirep.alltoall(np.zeros(n + 1))
    assert_next_collective_works("alltoall_rows")


def test_name_already_in_flight():
    n, rank = mpirep.size(), mpirep.rank()
    if n == 1:
        pytest.skip("a lone rank completes a tensor as soon as it is submitted")
    dtype = np.dtype(np.int32)
    last = rank == n - 1
    # Every rank but the last submits first and tries the name again; the tensor cannot complete
    # before the last rank submits it, after the barrier.
    if not last:
        first = mpirep.allreduce_async(reduce_input("Sum", rank, n, (4,), dtype), op=mpirep.Sum,
                                       name="twice")
        with pytest.raises(mpirep.InvalidArgumentError):
            mpirep.allreduce_async(np.zeros(4, dtype), op=mpirep.Sum, name="twice")
    check_comm().Barrier()
    if last:
        first = mpirep.allreduce_async(reduce_input("Sum", rank, n, (4,), dtype), op=mpirep.Sum,
                                       name="twice")
    assert_reduced(mpirep.synchronize(first), "Sum", n, (4,), dtype)


UNSUPPORTED = {
    "complex": lambda: mpirep.allreduce(np.ones(3, np.complex64)),
    "object": lambda: mpirep.allgather(np.array([None, 1], dtype=object)),
    "bool_sum": lambda: mpirep.allreduce(np.ones(3, bool), op=mpirep.Sum),
    "bool_average": lambda: mpirep.allreduce(np.ones(3, bool), op=mpirep.Average),
    "unicode": lambda: mpirep.broadcast(np.array(["a", "b"]), root_rank=0),
}


@pytest.mark.parametrize("case", list(UNSUPPORTED))
def test_unsupported_input(case):
    with pytest.raises(mpirep.UnsupportedError) as info:
        UNSUPPORTED[case]()
    assert isinstance(info.value, TypeError)
    assert_next_collective_works(f"unsupported.{case}")


# Refused on this rank before anything is enqueued: an unknown op by mpirep, what the core cannot
# convert by Python's own errors.
BAD_ARGUMENTS = {
    "op": (lambda: mpirep.allreduce(np.ones(2), op="Median"), mpirep.InvalidArgumentError),
    "prescale": (lambda: mpirep.allreduce_async(np.ones(2), prescale_factor=None), TypeError),
    "postscale": (lambda: mpirep.allreduce(np.ones(2), postscale_factor=[2.0]), TypeError),
    "process_set": (lambda: mpirep.allreduce(np.ones(2), process_set=2**40), OverflowError),
}


@pytest.mark.parametrize("case", list(BAD_ARGUMENTS))
def test_bad_arguments(case):
    submit, error = BAD_ARGUMENTS[case]
    with pytest.raises(error):
        submit()
    assert_next_collective_works(f"bad_argument.{case}")


def test_error_hierarchy():
    assert issubclass(mpirep.MpirepError, RuntimeError)
    for cls in (mpirep.MismatchError, mpirep.InvalidArgumentError, mpirep.UnsupportedError,
                mpirep.NotInitializedError, mpirep.ShutdownError, mpirep.StallError):
        assert issubclass(cls, mpirep.MpirepError)
    assert issubclass(mpirep.InvalidArgumentError, ValueError)
    assert issubclass(mpirep.UnsupportedError, TypeError)
    assert issubclass(mpirep.NotInitializedError, ValueError)
