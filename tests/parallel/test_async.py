"""Async handles: many named tensors in flight at once, submitted in a different order on each
rank; several Python threads submitting at once; and every async form returning what its
blocking form returns."""
import concurrent.futures
import gc
import sys
import time

import numpy as np
import pytest

import mpirep
from mpirep._core_loader import core
from expect import (ALL_DTYPES, BOOL, BOOL_OPS, OPS, assert_reduced, dtype_id, pattern,
                    reduce_expected, reduce_input)
from ranks import assert_identical_across_ranks, check_comm

IN_FLIGHT = 1200


def plan(count):
    """The same list of (kind, name, dtype, op, shape) on every rank."""
    rng = np.random.default_rng(1234)
    tensors = []
    for i in range(count):
        dtype = ALL_DTYPES[rng.integers(len(ALL_DTYPES))]
        op = rng.choice(BOOL_OPS if dtype == BOOL else list(OPS))
        shape = tuple(int(d) for d in rng.integers(0, 9, size=rng.integers(0, 3)))
        kind = rng.choice(["allreduce"] * 8 + ["allgather", "broadcast"])
        if kind == "allgather" and shape == ():
            shape = (1,)
        tensors.append((str(kind), f"flight.{i}", dtype, str(op), shape))
    return tensors


def submit(kind, name, dtype, op, shape, rank, n):
    if kind == "allreduce":
        return mpirep.allreduce_async(reduce_input(op, rank, n, shape, dtype), op=OPS[op], name=name)
    if kind == "allgather":
        return mpirep.allgather_async(pattern(rank, shape, dtype), name=name)
    return mpirep.broadcast_async(pattern(rank, shape, dtype), root_rank=len(name) % n, name=name)


def check(kind, name, dtype, op, shape, n, result):
    if kind == "allreduce":
        assert_reduced(result, op, n, shape, dtype, what=name)
    elif kind == "allgather":
        expected = np.concatenate([pattern(r, shape, dtype) for r in range(n)])
        np.testing.assert_array_equal(result, expected, strict=True, err_msg=name)
    else:
        np.testing.assert_array_equal(result, pattern(len(name) % n, shape, dtype), strict=True,
                                      err_msg=name)


def test_many_in_flight_in_rank_specific_order():
    n, rank = mpirep.size(), mpirep.rank()
    tensors = plan(IN_FLIGHT)
    rng = np.random.default_rng(rank + 1)
    handles = {}
    for i in rng.permutation(len(tensors)):
        handles[i] = submit(*tensors[i], rank, n)
    results = {i: mpirep.synchronize(handles[i]) for i in rng.permutation(len(tensors))}
    for i, t in enumerate(tensors):
        check(*t, n, results[i])
    assert_identical_across_ranks([results[i] for i in range(len(tensors))])


def test_poll_turns_true_and_synchronize_returns_result():
    n, rank = mpirep.size(), mpirep.rank()
    dtype = np.dtype(np.float32)
    handle = mpirep.allreduce_async(reduce_input("Sum", rank, n, (64,), dtype), op=mpirep.Sum)
    while not mpirep.poll(handle):
        pass
    assert mpirep.poll(handle) is True
    assert_reduced(mpirep.synchronize(handle), "Sum", n, (64,), dtype)


def test_a_handle_names_its_tensor_and_gives_its_result_once():
    n, rank = mpirep.size(), mpirep.rank()
    dtype = np.dtype(np.float32)
    named = mpirep.allreduce_async(reduce_input("Sum", rank, n, (6,), dtype), op=mpirep.Sum,
                                   name="once")
    unnamed = mpirep.allgather_async(pattern(rank, (2,), dtype))
    group = mpirep.grouped_allreduce_async([pattern(rank, (1,), dtype)] * 2, name="pair")
    assert named.name == "once"
    assert unnamed.name.startswith("allgather.noname.")
    assert group.name == "pair"
    result = mpirep.synchronize(named)
    with pytest.raises(mpirep.InvalidArgumentError, match="'once' was taken already"):
        mpirep.synchronize(named)
    mpirep.synchronize(unnamed)
    mpirep.synchronize(group)
    # The output's memory lives as long as the array, whose base holds it, not the handle: the
    # pool would hand freed memory to the next outputs of that size.
    del named
    gc.collect()
    others = [mpirep.allreduce(np.full(6, -1, dtype), op=mpirep.Sum, name=f"after.{i}")
              for i in range(4)]
    assert_reduced(result, "Sum", n, (6,), dtype)
    assert all(np.array_equal(o, np.full(6, -n, dtype)) for o in others)
    assert result.flags.writeable


def test_the_core_handle_is_final_and_untracked():
    """Python cannot make, subclass or add attributes to the core's handle, and the garbage
    collector does not track it (a step's hundreds of handles add nothing to its work)."""
    handle = mpirep.allreduce_async(np.ones(3, np.float32), name="plain")
    handle_type = type(handle)
    assert (handle_type.__module__, handle_type.__name__) == ("mpirep._core", "Handle")
    with pytest.raises(TypeError):
        handle_type()
    with pytest.raises(TypeError):
        type("Derived", (handle_type,), {})
    with pytest.raises(AttributeError):
        handle.note = 1
    with pytest.raises(AttributeError):
        handle.name = "renamed"
    assert not gc.is_tracked(handle)
    assert mpirep.synchronize(handle).base is handle


def test_the_core_keeps_no_reference_once_done_or_refused():
    """Neither an operation that ended nor one refused (a bad argument, an unsupported dtype, a
    name already in flight) keeps a reference to the array or the name it was given."""
    rank, n = mpirep.rank(), mpirep.size()
    x, odd = np.arange(6, dtype=np.float32) * (rank + 1), np.ones(2, np.complex64)
    name = ".".join(["references", "core"])  # made at run time: a literal is shared by the code
    watched = (x, odd, name)
    before = [sys.getrefcount(o) for o in watched]
    for _ in range(3):
        # The last rank submits after the others have tried the name again: it is in flight then.
        if rank < n - 1:
            first = mpirep.allreduce_async(x, op=mpirep.Sum, name=name)
            with pytest.raises(mpirep.InvalidArgumentError, match="already in flight"):
                mpirep.allgather_async(x, name=name)
        check_comm().Barrier()
        if rank == n - 1:
            first = mpirep.allreduce_async(x, op=mpirep.Sum, name=name)
        np.testing.assert_array_equal(mpirep.synchronize(first), np.arange(6) * n * (n + 1) // 2)
        with pytest.raises(TypeError):
            mpirep.allreduce_async(x, prescale_factor=None, name=name)
        with pytest.raises(mpirep.UnsupportedError):
            mpirep.allgather(odd, name=name)
    del first
    gc.collect()
    assert [sys.getrefcount(o) for o in watched] == before


@pytest.mark.parametrize("dtype", [np.dtype(np.int8), np.dtype(np.float64)], ids=dtype_id)
def test_every_async_form_matches_blocking(dtype):
    n, rank = mpirep.size(), mpirep.rank()
    splits = [(rank + d) % 2 for d in range(n)]
    x = pattern(rank, (sum(splits), 2), dtype)
    even = pattern(rank, (2 * n, 3), dtype)
    forms = {
        "allreduce": (mpirep.allreduce_async, mpirep.allreduce,
                      (reduce_input("Max", rank, n, (9,), dtype),), {"op": mpirep.Max}),
        "grouped": (mpirep.grouped_allreduce_async, mpirep.grouped_allreduce,
                    ([pattern(rank, (3,), dtype), pattern(rank, (2, 2), dtype)],), {"op": mpirep.Min}),
        "allgather": (mpirep.allgather_async, mpirep.allgather, (pattern(rank, (rank + 1,), dtype),), {}),
        "broadcast": (mpirep.broadcast_async, mpirep.broadcast, (pattern(rank, (4,), dtype), n - 1), {}),
        "reducescatter": (mpirep.reducescatter_async, mpirep.reducescatter,
                          (reduce_input("Sum", rank, n, (7,), dtype),), {"op": mpirep.Sum}),
        "alltoall": (mpirep.alltoall_async, mpirep.alltoall, (even,), {}),
        "alltoall_splits": (mpirep.alltoall_async, mpirep.alltoall, (x,), {"splits": splits}),
    }
    handles = {key: a(*args, **kw) for key, (a, _, args, kw) in forms.items()}
    from_async = {key: mpirep.synchronize(h) for key, h in handles.items()}
    from_blocking = {key: b(*args, **kw) for key, (_, b, args, kw) in forms.items()}
    for key in forms:
        got, want = from_async[key], from_blocking[key]
        if key == "alltoall_splits":
            assert isinstance(got, tuple) and len(got) == 2, key
            np.testing.assert_array_equal(np.asarray(got[1]), np.asarray(want[1]), err_msg=key)
            got, want = got[0], want[0]
        if key == "grouped":
            assert isinstance(got, list) and len(got) == 2
            for g, w in zip(got, want):
                np.testing.assert_array_equal(g, w, strict=True, err_msg=key)
        else:
            np.testing.assert_array_equal(got, want, strict=True, err_msg=key)


def test_name_can_be_reused_once_complete():
    n, rank = mpirep.size(), mpirep.rank()
    dtype = np.dtype(np.int32)
    for step in range(3):
        x = reduce_input("Sum", rank, n, (5,), dtype) * (step + 1)
        result = mpirep.allreduce(x, op=mpirep.Sum, name="reused")
        assert_reduced(result, "Sum", n, (5,), dtype,
                       expected=(step + 1) * reduce_expected("Sum", n, (5,), dtype))


def test_barrier_returns_on_every_rank():
    assert mpirep.barrier() is None


def test_several_python_threads_submit_at_once():
    n, rank = mpirep.size(), mpirep.rank()
    dtype = np.dtype(np.float32)
    threads, per_thread = 4, 40

    def work(t):
        return [mpirep.allreduce(reduce_input("Sum", rank, n, (t * 10 + i,), dtype),
                                 op=mpirep.Sum, name=f"thread{t}.{i}") for i in range(per_thread)]

    with concurrent.futures.ThreadPoolExecutor(threads) as pool:
        results = list(pool.map(work, range(threads)))
    for t, got in enumerate(results):
        for i, result in enumerate(got):
            assert_reduced(result, "Sum", n, (t * 10 + i,), dtype, what=f"thread{t}.{i}")


def test_a_thread_waiting_long_lets_another_return():
    """A blocked thread runs the core's rounds itself; another thread of the same rank whose
    collective ends meanwhile must still return. On rank 0 one thread waits for "late", which
    the other ranks submit only once their "early" has returned, while a second thread submits
    "early"."""
    n, rank = mpirep.size(), mpirep.rank()
    dtype = np.dtype(np.int64)

    def reduce(name, scale):
        x = reduce_input("Sum", rank, n, (6,), dtype) * scale
        return mpirep.allreduce(x, op=mpirep.Sum, name=name)

    if rank == 0:
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            requests_before = core().negotiation_stats()["requests_sent"]
            late = pool.submit(reduce, "late", 3)
            while core().negotiation_stats()["requests_sent"] == requests_before:
                time.sleep(0.001)  # until the other thread's "late" has reached the rounds
            early = reduce("early", 2)
            late = late.result()
    else:
        early = reduce("early", 2)
        late = reduce("late", 3)
    assert_reduced(early, "Sum", n, (6,), dtype, expected=2 * reduce_expected("Sum", n, (6,), dtype))
    assert_reduced(late, "Sum", n, (6,), dtype, expected=3 * reduce_expected("Sum", n, (6,), dtype))


def test_inputs_dropped_or_resized_while_in_flight_stay_intact():
    """The core reads inputs in place while the last rank has not submitted yet: an input the
    caller never keeps a reference to, one whose handle is dropped too, and one someone tries
    to resize must all stay intact (the freed memory is churned meanwhile)."""
    n, rank = mpirep.size(), mpirep.rank()
    dtype, shape = np.dtype(np.float64), (1 << 16,)  # 512 KiB: freed pages would be reused

    def submit():
        unreferenced = mpirep.allreduce_async(reduce_input("Sum", rank, n, shape, dtype),
                                              op=mpirep.Sum, name="in_flight.unreferenced")
        mpirep.allreduce_async(reduce_input("Sum", rank, n, shape, dtype), op=mpirep.Sum,
                               name="in_flight.orphan")  # nobody ever synchronizes this one
        resized = reduce_input("Sum", rank, n, shape, dtype) * 2
        kept = mpirep.allreduce_async(resized, op=mpirep.Sum, name="in_flight.resized")
        with pytest.raises(ValueError, match="resize"):
            resized.resize((2 * shape[0],))
        gc.collect()
        churn = [np.full(shape, -1.0) for _ in range(32)]
        return unreferenced, kept, churn

    if rank != n - 1:
        unreferenced, kept, _ = submit()
    check_comm().Barrier()  # every earlier rank has let go of its arrays; now the last submits
    if rank == n - 1:
        unreferenced, kept, _ = submit()
    assert_reduced(mpirep.synchronize(unreferenced), "Sum", n, shape, dtype, what="unreferenced")
    assert_reduced(mpirep.synchronize(kept), "Sum", n, shape, dtype,
                   expected=2 * reduce_expected("Sum", n, shape, dtype), what="resized input")
