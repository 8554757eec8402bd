"""The state elastic training commits, restores and syncs: hvd.elastic.State and ObjectState.

A state is made of named arrays and picklable objects (``snapshot``).  ``commit`` writes them
where a restarted job finds them (commit_log.py) and checks for host updates; ``restore``
reads the last commit back; ``sync`` gives every rank rank 0's values.
"""
import pickle

from mpirep.elastic.commit_log import CommitLog
from mpirep.elastic.errors import HostsChangedInterrupt
from mpirep.elastic.layout import Layout
from mpirep.elastic.transfer import broadcast_object
from mpirep.errors import MpirepError


class State:
    """Base class of elastic states.  A subclass says what it is made of with ``snapshot`` and
    ``load_snapshot``, and how ranks agree with ``sync``.

    ``bcast_object`` and ``get_rank`` are the arguments Horovod's State takes; mpirep needs
    neither, and accepts them so that Horovod subclasses run unchanged."""

    def __init__(self, bcast_object=None, get_rank=None):
        self._reset_callbacks = []
        self._log = None

    # Horovod's interface

    def register_reset_callbacks(self, callbacks):
        """Functions to call, in order, after every reset (a host lost or added), once size()
        and rank() describe the new set of ranks and before the state is synced."""
        self._reset_callbacks.extend(callbacks)

    def on_reset(self):
        self.reset()
        for callback in self._reset_callbacks:
            callback()

    def commit(self):
        """Keeps the state where a failure cannot take it, then checks for host updates
        (raising HostsChangedInterrupt on every rank at once if hosts changed).  Collective."""
        self.save()
        self._raise_if_hosts_changed()

    def check_host_updates(self):
        """Raises HostsChangedInterrupt, on every rank at the same call, if hosts were added or
        removed since the last check.  Collective."""
        self.commit_log.agree_on_hosts()
        self._raise_if_hosts_changed()

    def save(self):
        """Writes the state as the next commit, without raising for host updates.  Collective."""
        named_arrays, objects = self.snapshot()
        self.commit_log.save(Layout.of(named_arrays), [array for _, array in named_arrays],
                             pickle.dumps(objects))

    def restore(self):
        """Goes back to the last commit (or sync), undoing what changed since."""
        snapshot = self.commit_log.newest()
        if snapshot is None:
            raise MpirepError("there is no commit to restore: commit() or sync() first (run() "
                              "commits the state when it starts)")
        self.load_from(snapshot)

    def sync(self):
        """Gives every rank rank 0's values."""
        raise NotImplementedError(f"{type(self).__name__} must define sync()")

    def reset(self):
        """Called on a reset, before the reset callbacks."""

    # What the state is made of

    def snapshot(self):
        """``([(name, numpy array), ...], picklable objects)``: what a commit keeps.  The arrays
        may be views of live values; they are copied before the state changes again."""
        raise NotImplementedError(
            f"{type(self).__name__} must define snapshot() and load_snapshot(): mpirep restarts "
            "processes after a failure, so a state must say what to keep (or subclass "
            "ObjectState, whose attributes are kept)")

    def load_snapshot(self, arrays, objects):
        """Takes the values ``snapshot`` gave, as ``[numpy array, ...]`` in the same order."""
        raise NotImplementedError(f"{type(self).__name__} must define load_snapshot()")

    # Machinery

    @property
    def commit_log(self):
        if self._log is None:   # made on first use: it needs mpirep.init
            self._log = CommitLog()
        return self._log

    def _raise_if_hosts_changed(self):
        if self.commit_log.take_hosts_change():
            raise HostsChangedInterrupt(skip_sync=False)

    def load_from(self, snapshot):
        self.load_snapshot(snapshot.arrays, pickle.loads(snapshot.meta))


class ObjectState(State):
    """A state of plain Python values, given as keyword arguments and kept as attributes:
    ``state = ObjectState(epoch=0, batch=0)``, then ``state.epoch += 1``."""

    def __init__(self, bcast_object=None, get_rank=None, **kwargs):
        self._attribute_names = list(kwargs)
        for name, value in kwargs.items():
            setattr(self, name, value)
        super().__init__(bcast_object, get_rank)

    def snapshot(self):
        return [], self._attributes()

    def load_snapshot(self, arrays, objects):
        self._set_attributes(objects)

    def sync(self):
        """Gives every rank rank 0's values, and keeps them as the state ``restore`` goes back
        to until the next commit, as Horovod's states do."""
        self._set_attributes(broadcast_object(self._attributes(), 0, name="elastic.attributes"))
        self.save()

    def _attributes(self):
        return {name: getattr(self, name) for name in self._attribute_names}

    def _set_attributes(self, values):
        for name, value in values.items():
            setattr(self, name, value)
