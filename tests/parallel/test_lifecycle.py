"""init/shutdown: topology, re-init, a user communicator, and what happens around shutdown."""
import numpy as np
import pytest
from mpi4py import MPI

import mpirep
from expect import assert_reduced, reduce_input
from lifecycle import reinitialized


def test_topology_matches_mpi():
    world = MPI.COMM_WORLD
    local = world.Split_type(MPI.COMM_TYPE_SHARED)
    cross = world.Split(local.rank, world.rank)
    try:
        assert (mpirep.rank(), mpirep.size()) == (world.rank, world.size)
        assert (mpirep.local_rank(), mpirep.local_size()) == (local.rank, local.size)
        assert (mpirep.cross_rank(), mpirep.cross_size()) == (cross.rank, cross.size)
    finally:
        local.Free()
        cross.Free()


def test_reinit_after_shutdown():
    n, rank = mpirep.size(), mpirep.rank()
    dtype = np.dtype(np.int32)
    for round_ in range(3):
        mpirep.shutdown()
        assert not mpirep.is_initialized()
        mpirep.init()
        assert mpirep.is_initialized()
        assert (mpirep.rank(), mpirep.size()) == (rank, n)
        result = mpirep.allreduce(reduce_input("Sum", rank, n, (round_ + 3,), dtype), op=mpirep.Sum)
        assert_reduced(result, "Sum", n, (round_ + 3,), dtype)


def test_init_with_user_communicator_which_it_duplicates():
    world = MPI.COMM_WORLD
    half = world.Split(world.rank % 2, world.rank)
    members = list(range(world.rank % 2, world.size, 2))
    with reinitialized(comm=half):
        half.Free()  # mpirep works on its own duplicate
        assert (mpirep.size(), mpirep.rank()) == (len(members), members.index(world.rank))
        result = mpirep.allreduce(np.array([world.rank + 1, 1], dtype=np.int64), op=mpirep.Sum)
        gathered = mpirep.allgather(np.array([world.rank], dtype=np.int64))
    np.testing.assert_array_equal(result, [sum(r + 1 for r in members), len(members)])
    np.testing.assert_array_equal(gathered, members)


def test_init_with_a_list_of_ranks_in_its_order():
    """Horovod's init(comm=[ranks]): each half of the ranks starts mpirep among itself, its list
    in reverse order, which numbers the ranks."""
    world = MPI.COMM_WORLD
    members = list(range(world.rank % 2, world.size, 2))[::-1]
    with reinitialized(comm=members):
        assert (mpirep.size(), mpirep.rank()) == (len(members), members.index(world.rank))
        result = mpirep.allreduce(np.array([world.rank + 1, 1], dtype=np.int64), op=mpirep.Sum)
        gathered = mpirep.allgather(np.array([world.rank], dtype=np.int64))
    np.testing.assert_array_equal(result, [sum(r + 1 for r in members), len(members)])
    np.testing.assert_array_equal(gathered, members)


@pytest.mark.parametrize("ranks", ["others", "repeated", "outside"])
def test_init_with_a_bad_list_of_ranks_fails_on_every_rank(ranks):
    world = MPI.COMM_WORLD
    others = [r for r in range(world.size) if r != world.rank]
    bad = {"others": others, "repeated": [world.rank, world.rank],
           "outside": [world.rank, world.size]}[ranks]
    if ranks == "others" and not others:
        bad = [world.size]  # one rank: nothing else to name
    with pytest.raises(mpirep.InvalidArgumentError, match=f"rank {world.rank}: init"):
        with reinitialized(comm=bad):
            pass


def test_operations_need_initialisation():
    mpirep.shutdown()
    try:
        with pytest.raises(mpirep.NotInitializedError):
            mpirep.allreduce(np.ones(2))
        with pytest.raises(ValueError):
            mpirep.broadcast(np.ones(2), root_rank=0)
        with pytest.raises(mpirep.NotInitializedError):
            mpirep.rank()
    finally:
        mpirep.init()


def test_shutdown_cancels_a_tensor_other_ranks_never_submit():
    n, rank = mpirep.size(), mpirep.rank()
    if n == 1:
        pytest.skip("a lone rank completes every tensor it submits")
    orphan = mpirep.allreduce_async(np.arange(4.0), name="orphan") if rank == 0 else None
    mpirep.shutdown()
    try:
        if orphan is not None:
            with pytest.raises(mpirep.ShutdownError):
                mpirep.synchronize(orphan)
    finally:
        mpirep.init()
    dtype = np.dtype(np.float64)
    result = mpirep.allreduce(reduce_input("Sum", rank, n, (6,), dtype), op=mpirep.Sum)
    assert_reduced(result, "Sum", n, (6,), dtype)


def test_ranks_must_agree_on_the_peer_timeout():
    """The heartbeats' communicator exists only where liveness is on: rank 0 turning it off
    while the others keep it must fail init everywhere, not leave the ranks' comms unmatched."""
    n, rank = mpirep.size(), mpirep.rank()
    if n == 1:
        pytest.skip("needs a second rank")
    with pytest.raises(mpirep.InvalidArgumentError, match="peer_timeout_seconds \\(in ms\\) differs "
                                                          "between ranks \\(from 0 to 30000\\)"):
        with reinitialized(peer_timeout_seconds=0 if rank == 0 else 30):
            pass


def test_ranks_must_agree_on_whether_preemption_signals_are_watched():
    """Training that backs up runs an agreement collective at each step only where the setting
    is not empty: ranks that differ would wait for each other's collective forever."""
    n, rank = mpirep.size(), mpirep.rank()
    if n == 1:
        pytest.skip("needs a second rank")
    with pytest.raises(mpirep.InvalidArgumentError, match="preemption_signals \\(0: none\\) differs "
                                                          "between ranks \\(from 0 to 1\\)"):
        with reinitialized(preemption_signals="" if rank == n - 1 else "USR1"):
            pass
