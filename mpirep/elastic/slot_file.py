"""One copy of a committed state in one file, which several processes of a host may write
together, each its share of the arrays.

    header   magic, data offset, writer count, layout length; one marker per writer; layout JSON
    data     the arrays, at the layout's offsets
    meta     8-byte length, then the pickled objects (written by writer 0)

A writer sets its marker to -1, copies its share (writer 0 also the meta), then sets the marker
to the commit number.  The copy holds commit N only when every marker says N, so a copy cut off
halfway by a killed process is never read as whole.  Marker stores follow the data stores in
program order, and the file lives in the page cache, so whatever a killed writer stored is there.
"""
import mmap
import os
import struct

import numpy as np

from mpirep.elastic.layout import Layout

MAGIC = b"MPIREPC1"
_HEAD = struct.Struct("<8sQQQ")     # magic, data offset, writers, layout length
MAX_WRITERS = 256
_MARKERS_AT = 64
_LAYOUT_AT = _MARKERS_AT + 8 * MAX_WRITERS
_PAGE = 4096
_LENGTH = struct.Struct("<Q")


class Snapshot:
    """A committed state as read back: its number, layout, arrays (views of the file's mapping,
    valid while referenced) and pickled objects."""

    def __init__(self, commit, layout, arrays, meta):
        self.commit, self.layout, self.arrays, self.meta = commit, layout, arrays, meta


def _data_offset(layout_json):
    return -(-(_LAYOUT_AT + len(layout_json)) // _PAGE) * _PAGE


class SlotFile:
    def __init__(self, path):
        self.path = path
        self._fd = None
        self._map = None

    def write_share(self, commit, layout, arrays, meta, writer, writers):
        """Copies this writer's share of ``arrays`` (and, for writer 0, ``meta``) as commit
        ``commit``."""
        if not 0 <= writer < writers <= MAX_WRITERS:
            raise ValueError(f"writer {writer} of {writers}: at most {MAX_WRITERS} writers")
        layout_json = layout.to_json().encode()
        start = _data_offset(layout_json)
        mapped = self._mapping(start + layout.data_bytes)
        markers = np.frombuffer(mapped, np.int64, MAX_WRITERS, _MARKERS_AT)
        markers[writer] = -1
        # Every writer stores the same header bytes, so the order among them does not matter.
        mapped[:_HEAD.size] = _HEAD.pack(MAGIC, start, writers, len(layout_json))
        mapped[_LAYOUT_AT:_LAYOUT_AT + len(layout_json)] = layout_json
        views = layout.views(mapped, start)
        for index in layout.shares(writers)[writer]:
            np.copyto(views[index], arrays[index], casting="no")
        if writer == 0:
            os.pwrite(self._fd, _LENGTH.pack(len(meta)) + meta, start + layout.data_bytes)
        markers[writer] = commit

    def close(self, sync=False):
        """Lets go of the file, flushing it to its device first with ``sync``."""
        if self._fd is not None:
            if sync:
                os.fsync(self._fd)
            self._map = None
            os.close(self._fd)
            self._fd = None

    def _mapping(self, size):
        if self._fd is None:
            self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        if os.fstat(self._fd).st_size < size:
            os.ftruncate(self._fd, size)   # grown only: another writer may map the rest
        if self._map is None or len(self._map) < size:
            self._map = mmap.mmap(self._fd, size)
        return self._map

    def read(self):
        """The snapshot this file holds whole, or None."""
        try:
            with open(self.path, "rb") as f:
                mapped = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        except (OSError, ValueError):   # missing, or empty (mmap refuses length 0)
            return None
        if len(mapped) < _LAYOUT_AT:
            return None
        magic, start, writers, layout_length = _HEAD.unpack_from(mapped)
        if magic != MAGIC or not 1 <= writers <= MAX_WRITERS:
            return None
        markers = np.frombuffer(mapped, np.int64, writers, _MARKERS_AT)
        commit = int(markers[0])
        if commit < 0 or not (markers == commit).all():
            return None
        layout = Layout.from_json(mapped[_LAYOUT_AT:_LAYOUT_AT + layout_length].decode())
        meta_at = start + layout.data_bytes
        (meta_length,) = _LENGTH.unpack_from(mapped, meta_at)
        meta = mapped[meta_at + _LENGTH.size:meta_at + _LENGTH.size + meta_length]
        return Snapshot(commit, layout, layout.views(mapped, start), meta)
