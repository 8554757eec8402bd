"""Process sets: the ranks an operation runs over, with Horovod's interface, backed by the
core's process sets (each its own communicator).

A set is made with ``add_process_set(ranks)``, which every rank calls with the same ranks (it
is collective over all ranks), and is passed to any op as ``process_set=``. As in Horovod, a
broadcast's ``root_rank`` is a global rank, also on a set: scripts and checkpoints record global
ranks. (The core numbers a set's ranks 0..size-1 in increasing order; ``set_root`` converts.)
"""

import tensorflow as tf

import mpirep
from mpirep import session


class ProcessSet:
    """A set of ranks. ``process_set_id`` is None until the set is registered with
    :func:`add_process_set` (the global set is registered from the start, with id 0)."""

    def __init__(self, ranks=None):
        self._ranks = None if ranks is None else sorted({int(r) for r in ranks})
        self.process_set_id = None

    @property
    def ranks(self):
        return list(range(session.size())) if self._ranks is None else list(self._ranks)

    def size(self):
        return len(self.ranks)

    def included(self):
        return session.rank() in self.ranks

    def rank(self):
        """This process's rank within the set, or -1 when outside it."""
        ranks = self.ranks
        return ranks.index(session.rank()) if session.rank() in ranks else -1

    def __eq__(self, other):
        return (isinstance(other, ProcessSet) and self.process_set_id == other.process_set_id
                and self.ranks == other.ranks)

    def __hash__(self):
        return hash(self.process_set_id)

    def __repr__(self):
        return f"ProcessSet(process_set_id={self.process_set_id}, ranks={self.ranks})"


global_process_set = ProcessSet()
global_process_set.process_set_id = 0


def add_process_set(process_set):
    """Registers a set (a ProcessSet or a list of ranks) and returns it, with its id set.
    Collective over all ranks: every rank registers the same sets in the same order."""
    if not isinstance(process_set, ProcessSet):
        process_set = ProcessSet(process_set)
    if process_set.process_set_id is not None:
        raise ValueError(f"{process_set} is already registered")
    bad = [r for r in process_set.ranks if not 0 <= r < session.size()]
    if bad:
        raise ValueError(f"process set ranks {bad} are outside 0..{session.size() - 1}")
    process_set.process_set_id = mpirep.add_process_set(process_set.ranks)
    return process_set


def remove_process_set(process_set):
    """Unregisters a set (collective over all ranks); returns whether it was registered. The
    global set cannot be removed."""
    if process_set.process_set_id in (None, 0):
        return False
    try:
        mpirep.remove_process_set(process_set.process_set_id)
    except mpirep.InvalidArgumentError:
        return False
    process_set.process_set_id = None
    return True


def resolve(process_set):
    """The core's id for ``process_set`` and (rank in the set, size of the set), checked:
    a set the core does not know raises ValueError; a rank outside the set raises
    tf.errors.InvalidArgumentError, as in Horovod."""
    if process_set is global_process_set or process_set is None:
        return 0, session.rank(), session.size()
    set_id = process_set.process_set_id
    if set_id is None:
        raise ValueError(f"{process_set} is not registered: call add_process_set first")
    ranks = mpirep.process_set_ranks(set_id)  # raises InvalidArgumentError, a ValueError
    if session.rank() not in ranks:
        raise tf.errors.InvalidArgumentError(
            None, None, f"rank {session.rank()} is not in process set {set_id} (ranks {ranks}), "
            f"so it cannot take part in its ops")
    return set_id, ranks.index(session.rank()), len(ranks)


def set_root(set_id, root_rank):
    """The core's number, within set ``set_id``, for the global rank ``root_rank``. A root
    outside the set raises tf.errors.InvalidArgumentError; on the global set any root passes
    through, for the core to check."""
    if set_id == 0:
        return int(root_rank)
    ranks = mpirep.process_set_ranks(set_id)
    if root_rank not in ranks:
        raise tf.errors.InvalidArgumentError(
            None, None, f"rank {session.rank()}: root_rank {root_rank} is not in process set "
            f"{set_id} (ranks {ranks}); root_rank is a global rank")
    return ranks.index(root_rank)
