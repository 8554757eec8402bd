"""Numbered commits of one state, and where they are kept (stores.py).

In a job launched elastically every host keeps a copy, written by its ranks together, and
commit() returns only when every host's copy is whole (one small allreduce), so any one host
can be lost without losing the last commit.  That allreduce also carries the newest hosts
update each rank heard of, so that all ranks agree on it at the same commit.
"""
import os
import socket

import numpy as np

import mpirep
from mpirep.elastic import lifeline
from mpirep.elastic.settings import settings
from mpirep.elastic.stores import HostStore, MemoryStore, SharedCopy, newest


def host_store_directory(config):
    """This host's directory for the job's copies.  The host name is part of it because hosts
    that share a file system (containers, emulated hosts) must still keep separate copies."""
    return os.path.join(config.store_dir, f"mpirep-elastic-{config.run_id}", socket.gethostname())


class CommitLog:
    def __init__(self):
        config = settings()
        self.launched = config.launched
        self.store = HostStore(host_store_directory(config)) if self.launched else MemoryStore()
        self.shared = SharedCopy(config.shared_dir) if config.shared_dir else None
        self.last = 0               # number of the last commit; the first is 1
        self.hosts_serial = 0       # the hosts update all ranks agreed on last
        self.hosts_changed = False  # agreed on, not yet raised as HostsChangedInterrupt
        self._rounds = 0

    def save(self, layout, arrays, meta):
        """Writes the next commit; collective when launched."""
        commit = self.last + 1
        self.store.save(commit, layout, arrays, meta, mpirep.local_rank(), mpirep.local_size())
        if self.shared is not None and mpirep.rank() == 0:
            self.shared.save(commit, layout, arrays, meta)
        self.last = commit
        self.agree_on_hosts()

    def agree_on_hosts(self):
        """One allreduce (when launched): every rank has finished what it did before, and all
        learn the newest hosts update any of them heard of."""
        if not self.launched:
            return
        heard = lifeline.current().hosts_serial if lifeline.current() else 0
        self._rounds += 1
        agreed = int(mpirep.allreduce(np.array([heard], np.int64), op=mpirep.Max,
                                      name=f"elastic.agree.{self._rounds}")[0])
        if agreed > self.hosts_serial:
            self.hosts_serial = agreed
            self.hosts_changed = True

    def take_hosts_change(self):
        """Whether an agreed hosts update is waiting to be raised; it is then taken."""
        changed, self.hosts_changed = self.hosts_changed, False
        return changed

    def newest(self):
        """The newest whole commit this process can read: its host's, or the shared copy."""
        return newest(self.store.newest(), self.shared.newest() if self.shared else None)
