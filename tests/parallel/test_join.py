"""join(): ranks that run out of data join; the others finish their steps, the joined ranks
taking part with zeros (no rows for allgather); then every rank returns from join."""
import numpy as np
import pytest

import mpirep
from ranks import assert_identical_across_ranks


def test_uneven_steps_then_join():
    n, rank = mpirep.size(), mpirep.rank()
    steps = lambda r: 2 + r  # rank r has 2 + r batches  # noqa: E731
    sums, gathers = [], []
    for step in range(steps(rank)):
        active = [r for r in range(n) if steps(r) > step]
        x = np.arange(5, dtype=np.float64) * (rank + 1) + step
        total = mpirep.allreduce(x, op=mpirep.Sum, name=f"join.sum.{step}")
        expected = sum(np.arange(5.0) * (r + 1) + step for r in active)
        np.testing.assert_array_equal(total, expected)
        # Average divides by all ranks, joined ones included; inputs keep the mean exact
        average = mpirep.allreduce(np.full(3, float(n * (rank + 1))), name=f"join.avg.{step}")
        np.testing.assert_array_equal(average, np.full(3, sum(r + 1.0 for r in active)))
        rows = mpirep.allgather(np.full((rank + 1, 2), rank, np.int32), name=f"join.gather.{step}")
        expected_rows = np.concatenate([np.full((r + 1, 2), r, np.int32) for r in active])
        np.testing.assert_array_equal(rows, expected_rows)
        sums.append(total)
        gathers.append(rows)
    last = mpirep.join()
    assert last == max(range(n), key=lambda r: (steps(r), r))
    assert_identical_across_ranks([np.int64(last)])
    # after everyone joined, collectives are back to normal
    after = mpirep.allreduce(np.full(2, rank + 1, np.int64), op=mpirep.Sum, name="join.after")
    np.testing.assert_array_equal(after, np.full(2, n * (n + 1) // 2))


def test_alltoall_fails_while_a_rank_has_joined():
    n, rank = mpirep.size(), mpirep.rank()
    if n == 1:
        pytest.skip("needs a second rank")
    if rank == 0:
        mpirep.join()
        return
    with pytest.raises(mpirep.UnsupportedError, match="rank 0 have joined"):
        mpirep.alltoall(np.arange(n), name="join.alltoall")
    mpirep.join()


def test_unnamed_operations_line_up_after_join():
    n, rank = mpirep.size(), mpirep.rank()
    for _ in range(rank):  # rank r issues r unnamed allreduces, the joined ranks standing in
        mpirep.allreduce(np.ones(1), op=mpirep.Sum)
    mpirep.join()
    total = mpirep.allreduce(np.full(3, rank + 1, np.int64), op=mpirep.Sum)  # unnamed again
    np.testing.assert_array_equal(total, np.full(3, n * (n + 1) // 2))
