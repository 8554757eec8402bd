"""Process sets: collectives among a subset of the ranks, numbered inside the set."""
import numpy as np
import pytest

import mpirep
from lifecycle import reinitialized
from ranks import assert_identical_across_ranks


def test_collectives_inside_a_set(even_ranks):
    process_set, members = even_ranks
    rank = mpirep.rank()
    assert mpirep.process_set_ranks(process_set) == members
    if rank not in members:
        with pytest.raises(mpirep.InvalidArgumentError, match="not in process set"):
            mpirep.allreduce(np.ones(3), process_set=process_set)
        assert_identical_across_ranks([])
        return
    k, inner = len(members), members.index(rank)
    assert mpirep.process_set_size(process_set) == k and mpirep.process_set_rank(process_set) == inner
    total = mpirep.allreduce(np.arange(6, dtype=np.int64) * (rank + 1), op=mpirep.Sum, process_set=process_set)
    np.testing.assert_array_equal(total, np.arange(6) * sum(r + 1 for r in members))
    rows = mpirep.allgather(np.full((inner + 1, 2), rank, np.int32), process_set=process_set)
    np.testing.assert_array_equal(rows, np.concatenate([np.full((i + 1, 2), r, np.int32)
                                                        for i, r in enumerate(members)]))
    root = k - 1  # a rank number inside the set
    got = mpirep.broadcast(np.full(4, rank, np.float32), root_rank=root, process_set=process_set)
    np.testing.assert_array_equal(got, np.full(4, members[root], np.float32))
    exchanged = mpirep.alltoall(np.arange(k, dtype=np.int64) + 100 * rank, process_set=process_set)
    np.testing.assert_array_equal(exchanged, np.array([100 * r + inner for r in members]))
    assert_identical_across_ranks([])


@pytest.mark.parametrize("members", [[0], [0, 1], [1, 2, 3]])
def test_hierarchical_allreduce_inside_a_set(members):
    """Each set's ranks are grouped by host on their own; forced on, on one host. Integer
    results equal to the closed form are the same bits on every member."""
    n, rank = mpirep.size(), mpirep.rank()
    members = [r for r in members if r < n]
    if not members:
        pytest.skip(f"no such ranks at np={n}")
    with reinitialized(hierarchical_allreduce=1):
        process_set = mpirep.add_process_set(members)
        if rank in members:
            x = np.arange(1001, dtype=np.int64) * (rank + 1) - 7 * rank
            got = mpirep.allreduce(x, op=mpirep.Average, process_set=process_set,
                                   name=f"hierarchical.{members}")
            expected = (np.arange(1001) * sum(r + 1 for r in members) - 7 * sum(members)) // len(members)
            np.testing.assert_array_equal(got, expected)
        mpirep.remove_process_set(process_set)


def test_world_collectives_still_work_beside_a_set(even_ranks):
    process_set, members = even_ranks
    rank, n = mpirep.rank(), mpirep.size()
    handles = []
    if rank in members:  # unnamed set operations must not shift the world's numbering
        handles.append(mpirep.allreduce_async(np.ones(2), op=mpirep.Sum, process_set=process_set))
    world = mpirep.allreduce(np.full(2, rank, np.int64), op=mpirep.Sum)
    np.testing.assert_array_equal(world, np.full(2, n * (n - 1) // 2))
    for h in handles:
        np.testing.assert_array_equal(mpirep.synchronize(h), np.full(2, float(len(members))))


def test_one_name_on_several_sets_at_once_does_not_meet():
    """Every process set has a namespace of its own, as in Horovod: the same name, in flight at
    once on the global set and on two others (which hold this rank or not, and may overlap),
    reduces, gathers and broadcasts within each set alone."""
    n, rank = mpirep.size(), mpirep.rank()
    evens, upper = list(range(0, n, 2)), list(range(n // 2, n))
    sets = {0: list(range(n)), mpirep.add_process_set(evens): evens, mpirep.add_process_set(upper): upper}
    mine = {s: members for s, members in sets.items() if rank in members}
    x = np.arange(5, dtype=np.int64) * (rank + 1)
    submitted = {s: (mpirep.allreduce_async(x + 100 * s, op=mpirep.Sum, name="shared", process_set=s),
                     mpirep.allgather_async(np.full((1, 2), rank + 10 * s), name="shared.rows", process_set=s),
                     mpirep.broadcast_async(np.full(3, rank + 10 * s), root_rank=len(m) - 1, name="shared.root",
                                            process_set=s))
                 for s, m in mine.items()}
    assert len({h.name for handles in submitted.values() for h in handles}) == 3 * len(mine)
    for s, (total, rows, root) in submitted.items():
        members = mine[s]
        np.testing.assert_array_equal(mpirep.synchronize(total),
                                      np.arange(5) * sum(r + 1 for r in members) + 100 * s * len(members))
        np.testing.assert_array_equal(mpirep.synchronize(rows),
                                      np.array([[r + 10 * s] * 2 for r in members]))
        np.testing.assert_array_equal(mpirep.synchronize(root), np.full(3, members[-1] + 10 * s))
    for s in sets:
        if s:
            mpirep.remove_process_set(s)
    assert_identical_across_ranks([])


def test_unknown_and_invalid_sets():
    with pytest.raises(ValueError, match="unknown process set 4242"):
        mpirep.allreduce(np.ones(2), process_set=4242)
    with pytest.raises(mpirep.InvalidArgumentError, match="distinct ranks"):
        mpirep.add_process_set([0, 0])
    with pytest.raises(mpirep.InvalidArgumentError, match="cannot be removed"):
        mpirep.remove_process_set(0)
