"""Where commits are kept.

HostStore: each host's copy, in two slot files written in turn, so that a commit cut off halfway
leaves the one before it whole.  The ranks of a host write their shares of the same file (the
state is the same on every rank), so a host pays for one copy, split among its ranks.
SharedCopy: one more copy, written by rank 0 alone, in a directory every host sees.
MemoryStore: commits of a job not launched elastically, which never outlive the process.
"""
import os
import shutil

import numpy as np

from mpirep.elastic.slot_file import SlotFile, Snapshot


def newest(*snapshots):
    found = [s for s in snapshots if s is not None]
    return max(found, key=lambda s: s.commit) if found else None


class HostStore:
    def __init__(self, directory):
        self.directory = directory
        os.makedirs(directory, exist_ok=True)
        self._slots = [SlotFile(os.path.join(directory, f"slot{i}")) for i in range(2)]

    def save(self, commit, layout, arrays, meta, writer, writers):
        self._slots[commit % 2].write_share(commit, layout, arrays, meta, writer, writers)

    def newest(self):
        return newest(*(slot.read() for slot in self._slots))

    def remove(self):
        shutil.rmtree(self.directory, ignore_errors=True)


class SharedCopy:
    FILE = "commit"

    def __init__(self, directory):
        self.directory = directory
        os.makedirs(directory, exist_ok=True)

    def save(self, commit, layout, arrays, meta):
        path = os.path.join(self.directory, self.FILE)
        partial = f"{path}.partial"
        slot = SlotFile(partial)
        slot.write_share(commit, layout, arrays, meta, writer=0, writers=1)
        slot.close(sync=True)
        os.replace(partial, path)

    def newest(self):
        return SlotFile(os.path.join(self.directory, self.FILE)).read()


class MemoryStore:
    def __init__(self):
        self._last = None

    def save(self, commit, layout, arrays, meta, writer=0, writers=1):
        self._last = Snapshot(commit, layout, [np.array(a, copy=True) for a in arrays], bytes(meta))

    def newest(self):
        return self._last
