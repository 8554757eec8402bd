"""Process sets: the ranks an operation runs over, with Horovod's interface.

The core runs every collective over one communicator, so an op on a set runs only when the set
holds every rank (``global_process_set`` or an equivalent). Ops on a smaller set raise
NotImplementedError until the core has sub-communicators; the sets themselves can already be
made, registered and queried.
"""

import itertools

import tensorflow as tf

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

    def __repr__(self):
        return f"ProcessSet(process_set_id={self.process_set_id}, ranks={self.ranks})"


global_process_set = ProcessSet()
global_process_set.process_set_id = 0

_registered = {0: global_process_set}
_next_id = itertools.count(1)


def add_process_set(process_set):
    """Registers a set (a ProcessSet or a list of ranks) and returns it with its id. Every rank
    must register the same sets in the same order."""
    if not isinstance(process_set, ProcessSet):
        process_set = ProcessSet(process_set)
    if process_set.process_set_id is not None:
        raise ValueError(f"{process_set} is already registered")
    bad = [r for r in process_set.ranks if not 0 <= r < session.size()]
    if bad:
        raise ValueError(f"process set ranks {bad} are outside 0..{session.size() - 1}")
    process_set.process_set_id = next(_next_id)
    _registered[process_set.process_set_id] = process_set
    return process_set


def remove_process_set(process_set):
    """Unregisters a set; returns whether it was registered. The global set stays."""
    if process_set.process_set_id in (None, 0):
        return False
    removed = _registered.pop(process_set.process_set_id, None) is not None
    process_set.process_set_id = None
    return removed


def check(process_set):
    """Raises unless an op on ``process_set`` can run on this rank."""
    if process_set is global_process_set:
        return
    if process_set.process_set_id not in _registered:
        raise ValueError(f"{process_set} is not registered: call add_process_set first")
    if not process_set.included():
        raise tf.errors.InvalidArgumentError(
            None, None, f"rank {session.rank()} is not in {process_set}, so it cannot take part in its ops")
    if process_set.ranks != list(range(session.size())):
        raise NotImplementedError(
            "mpirep runs collectives over all ranks only: process sets smaller than the world "
            "need sub-communicator support in the core")
