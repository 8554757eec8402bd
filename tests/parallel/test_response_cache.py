"""The response cache: a repeat of a negotiated tensor (same name, same request on every rank)
runs without rank 0 (docs/core.md, "Negotiation"), and everything negotiation guarantees still
holds for it: results, one order, mismatch errors on every rank, process sets, join."""
import numpy as np
import pytest

import mpirep
from lifecycle import reinitialized
from mpirep._core_loader import core
from ranks import assert_identical_across_ranks, check_comm


def cached_tensors():
    return core().negotiation_stats()["cached_tensors"]


def every_collective(rank, n, step):
    """(name, start the operation, expected result) for one of each collective; the inputs depend
    on the rank and the step, the shapes only on the rank."""
    base = np.arange(6, dtype=np.int64)
    root = step % n
    rows = np.arange(2 * n * 3, dtype=np.float32).reshape(2 * n, 3)
    return [
        ("cache.sum", lambda: mpirep.allreduce_async(base * (rank + 1) + step, op=mpirep.Sum, name="cache.sum"),
         base * (n * (n + 1) // 2) + n * step),
        ("cache.max", lambda: mpirep.allreduce_async(np.full(3, rank + step, np.int16), op=mpirep.Max,
                                                     name="cache.max"),
         np.full(3, n - 1 + step, np.int16)),
        ("cache.scaled", lambda: mpirep.allreduce_async(np.full(4, 2.0 * (rank + 1)), op=mpirep.Sum,
                                                        prescale_factor=0.5, postscale_factor=4.0,
                                                        name="cache.scaled"),
         np.full(4, 4.0 * n * (n + 1) / 2)),
        ("cache.gather", lambda: mpirep.allgather_async(np.full((rank + 1, 2), rank + step, np.int32),
                                                        name="cache.gather"),
         np.concatenate([np.full((r + 1, 2), r + step, np.int32) for r in range(n)])),
        ("cache.broadcast", lambda: mpirep.broadcast_async(np.full(5, rank * 10 + step, np.float64), root,
                                                           name="cache.broadcast"),
         np.full(5, root * 10 + step, np.float64)),
        ("cache.scatter", lambda: mpirep.reducescatter_async(rows * (rank + 1) + step, op=mpirep.Sum,
                                                             name="cache.scatter"),
         (rows * (n * (n + 1) // 2) + n * step)[2 * rank:2 * rank + 2]),
        ("cache.alltoall", lambda: mpirep.alltoall_async(np.arange(n, dtype=np.int64) + 100 * rank + step,
                                                         name="cache.alltoall"),
         np.array([100 * r + rank + step for r in range(n)])),
    ]


def test_repeats_run_from_the_cache():
    n, rank = mpirep.size(), mpirep.rank()
    comm = check_comm()
    for step in range(4):
        plans = every_collective(rank, n, step)
        # the broadcast's root moves with the step: a new request, unless there is one rank
        repeats = 0 if step == 0 else len(plans) - (n > 1)
        comm.Barrier()  # together: a hit some rank lacks for a second goes through rank 0
        before = cached_tensors()
        order = np.random.default_rng([step, rank]).permutation(len(plans))
        handles = {i: plans[i][1]() for i in order}
        results = [mpirep.synchronize(handles[i]) for i in range(len(plans))]
        for (name, _, expected), result in zip(plans, results):
            np.testing.assert_array_equal(result, expected, err_msg=f"step {step}: {name}")
        assert_identical_across_ranks([r for (name, _, _), r in zip(plans, results) if name != "cache.scatter"
                                       and name != "cache.alltoall"])
        hits = cached_tensors() - before
        assert hits == repeats, f"step {step}: {hits} hits, expected {repeats}"


def differ(rank, n, first, rest):
    return rest if rank == n - 1 else first


CHANGES = {  # case -> (arguments of the allreduce on `rank`, error text)
    "shape": (lambda rank, n: {"x": np.zeros(differ(rank, n, 4, 5))},
              "mismatched shapes for tensor 'cache.changed': [4] on rank"),
    "dtype": (lambda rank, n: {"x": np.zeros(4, differ(rank, n, np.float64, np.float32))},
              "mismatched data types for tensor 'cache.changed': float64 on rank"),
    "op": (lambda rank, n: {"x": np.zeros(4), "op": differ(rank, n, mpirep.Sum, mpirep.Max)},
           "mismatched reduction ops for tensor 'cache.changed': Sum on rank"),
    "postscale": (lambda rank, n: {"x": np.zeros(4), "postscale_factor": differ(rank, n, 1.0, 0.5)},
                  "mismatched postscale factors for tensor 'cache.changed': 1 on rank"),
}


@pytest.mark.parametrize("case", list(CHANGES))
def test_a_changed_request_after_caching_is_a_mismatch_on_every_rank(case):
    n, rank = mpirep.size(), mpirep.rank()
    if n == 1:
        pytest.skip("needs a second rank")

    def reduce(x, op=mpirep.Sum, postscale_factor=1.0):
        return mpirep.allreduce(x, op=op, postscale_factor=postscale_factor, name="cache.changed")

    for _ in range(2):
        np.testing.assert_array_equal(reduce(np.full(4, rank + 1.0)), np.full(4, n * (n + 1) / 2))
    arguments, text = CHANGES[case]
    with pytest.raises(mpirep.MismatchError) as error:
        reduce(**arguments(rank, n))
    assert text in str(error.value) and f"on rank {n - 1}" in str(error.value), str(error.value)
    assert_identical_across_ranks([np.frombuffer(str(error.value).encode(), np.uint8)])
    # the next collective of that name works, and is cached again
    for step in range(2):
        before = cached_tensors()
        np.testing.assert_array_equal(reduce(np.full(4, rank + 1.0)), np.full(4, n * (n + 1) / 2))
        assert cached_tensors() - before == step


def test_process_set_tensors_run_from_the_cache_without_the_other_ranks(even_ranks):
    process_set, members = even_ranks
    n, rank = mpirep.size(), mpirep.rank()
    if rank in members:
        for step in range(4):
            before = cached_tensors()
            got = mpirep.allreduce(np.full(3, rank + step, np.int64), op=mpirep.Sum, name="cache.set",
                                   process_set=process_set)
            np.testing.assert_array_equal(got, np.full(3, sum(members) + len(members) * step))
            assert cached_tensors() - before == (1 if step else 0)
    # then every rank, the set's members with a cached set tensor in flight beside it
    handle = None
    if rank in members:
        handle = mpirep.allreduce_async(np.full(3, rank, np.int64), op=mpirep.Sum, name="cache.set",
                                        process_set=process_set)
    world = mpirep.allreduce(np.full(2, rank, np.int64), op=mpirep.Sum, name="cache.world")
    np.testing.assert_array_equal(world, np.full(2, n * (n - 1) // 2))
    if handle is not None:
        np.testing.assert_array_equal(mpirep.synchronize(handle), np.full(3, sum(members)))


def test_join_during_cached_steady_state():
    n, rank = mpirep.size(), mpirep.rank()
    steps = lambda r: 3 + r  # noqa: E731
    for step in range(steps(rank)):
        active = [r for r in range(n) if steps(r) > step]
        total = mpirep.allreduce(np.full(4, (rank + 1) * (step + 1), np.int64), op=mpirep.Sum,
                                 name="cache.join.sum")
        np.testing.assert_array_equal(total, np.full(4, sum(r + 1 for r in active) * (step + 1)))
        rows = mpirep.allgather(np.full((rank + 1, 2), step, np.int32), name="cache.join.gather")
        np.testing.assert_array_equal(rows, np.full((sum(r + 1 for r in active), 2), step, np.int32))
    assert mpirep.join() == n - 1
    for step in range(2):  # after the join, repeats run from the cache again
        before = cached_tensors()
        total = mpirep.allreduce(np.full(4, rank + 1, np.int64), op=mpirep.Sum, name="cache.join.after")
        np.testing.assert_array_equal(total, np.full(4, n * (n + 1) // 2))
        assert cached_tensors() - before == step


def test_eviction_at_a_tiny_capacity():
    n, rank = mpirep.size(), mpirep.rank()
    with reinitialized(cache_capacity=2):
        hits = cached_tensors()
        for step, names in enumerate([["a", "b"], ["a", "b"], ["c"], ["a", "c"], ["b", "c", "a"], ["a", "b"]]):
            order = np.random.default_rng([step, rank]).permutation(len(names))
            handles = {names[i]: mpirep.allreduce_async(np.full(3, (rank + 1) * (step + 1), np.int32),
                                                        op=mpirep.Sum, name=f"tiny.{names[i]}") for i in order}
            for name in names:
                np.testing.assert_array_equal(mpirep.synchronize(handles[name]),
                                              np.full(3, n * (n + 1) // 2 * (step + 1), np.int32))
        assert cached_tensors() > hits


def test_ranks_must_agree_on_the_cache_capacity():
    n, rank = mpirep.size(), mpirep.rank()
    if n == 1:
        pytest.skip("needs a second rank")
    with pytest.raises(mpirep.InvalidArgumentError, match=f"cache_capacity differs between ranks "
                                                          f"\\(from 16 to {15 + n}\\)"):
        with reinitialized(cache_capacity=16 + rank):
            pass
