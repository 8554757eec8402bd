"""Where each array of a committed state lies in a copy, and which writer copies it."""
import dataclasses
import json

import ml_dtypes  # noqa: F401  (registers bfloat16 with numpy, so np.dtype("bfloat16") works)
import numpy as np

ALIGN = 64


@dataclasses.dataclass(frozen=True)
class Entry:
    name: str
    dtype: str        # numpy dtype name, e.g. "float32", "bfloat16"
    shape: tuple
    offset: int       # bytes from the start of the data region

    @property
    def nbytes(self):
        return int(np.prod(self.shape, dtype=np.int64)) * np.dtype(self.dtype).itemsize


@dataclasses.dataclass(frozen=True)
class Layout:
    entries: tuple

    @classmethod
    def of(cls, named_arrays):
        """The layout of ``[(name, array), ...]``, each array aligned to 64 bytes."""
        entries, offset = [], 0
        for name, array in named_arrays:
            entry = Entry(str(name), np.dtype(array.dtype).name, tuple(int(n) for n in array.shape),
                          offset)
            entries.append(entry)
            offset += -(-entry.nbytes // ALIGN) * ALIGN
        return cls(tuple(entries))

    @property
    def data_bytes(self):
        if not self.entries:
            return 0
        last = self.entries[-1]
        return last.offset + -(-last.nbytes // ALIGN) * ALIGN

    def to_json(self):
        return json.dumps([[e.name, e.dtype, list(e.shape), e.offset] for e in self.entries],
                          separators=(",", ":"))

    @classmethod
    def from_json(cls, text):
        return cls(tuple(Entry(name, dtype, tuple(shape), offset)
                         for name, dtype, shape, offset in json.loads(text)))

    def views(self, buffer, start):
        """One array per entry, viewing ``buffer`` (no copy) from byte ``start`` on."""
        return [np.frombuffer(buffer, dtype=np.dtype(e.dtype), count=int(np.prod(e.shape)),
                              offset=start + e.offset).reshape(e.shape)
                for e in self.entries]

    def shares(self, writers):
        """Which entries each of ``writers`` writers copies: contiguous runs of about equal
        bytes, the same on every rank."""
        total = sum(e.nbytes for e in self.entries)
        runs, done = [[] for _ in range(writers)], 0
        for index, entry in enumerate(self.entries):
            writer = min(writers - 1, done * writers // total) if total else 0
            runs[writer].append(index)
            done += entry.nbytes
        return runs
