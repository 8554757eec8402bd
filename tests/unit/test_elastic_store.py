"""The files elastic commits are kept in (mpirep/elastic/slot_file.py, stores.py), without
MPI: several writers sharing one copy, a copy cut off halfway, the two alternating slots, the
shared copy, and every dtype the core knows."""
import os
import pathlib
import pickle
import sys

import ml_dtypes
import numpy as np
import pytest

sys.path.append(str(pathlib.Path(__file__).resolve().parents[2]))
from mpirep.elastic.layout import Layout  # noqa: E402
from mpirep.elastic.slot_file import SlotFile  # noqa: E402
from mpirep.elastic.stores import HostStore, SharedCopy  # noqa: E402

DTYPES = [np.uint8, np.int8, np.uint16, np.int16, np.int32, np.int64, np.float16,
          ml_dtypes.bfloat16, np.float32, np.float64, np.bool_, np.uint32]


def arrays(seed):
    """Arrays of every dtype and of shapes from 0-d to 3-d, their values set by seed."""
    shapes = [(), (0,), (7,), (3, 5), (2, 3, 4)]
    out = []
    for i, dtype in enumerate(DTYPES):
        shape = shapes[i % len(shapes)]
        values = (np.arange(int(np.prod(shape))) * 7 + seed * 3 + i) % 100
        out.append((f"a{i}", values.reshape(shape).astype(dtype)))
    return out


def write(slot, commit, named, meta, writers):
    layout = Layout.of(named)
    for writer in range(writers):
        slot.write_share(commit, layout, [a for _, a in named], meta, writer, writers)


def assert_same(snapshot, named, meta):
    assert [e.name for e in snapshot.layout.entries] == [n for n, _ in named]
    for got, (_, want) in zip(snapshot.arrays, named):
        assert got.dtype == want.dtype and got.shape == want.shape
        assert got.tobytes() == want.tobytes()
    assert bytes(snapshot.meta) == meta


@pytest.mark.parametrize("writers", [1, 2, 3, 5])
def test_writers_share_one_copy(tmp_path, writers):
    named, meta = arrays(1), pickle.dumps({"epoch": 3, "batch": 17})
    slots = [SlotFile(str(tmp_path / "slot")) for _ in range(writers)]   # one per process
    layout = Layout.of(named)
    for writer, slot in enumerate(slots):
        slot.write_share(9, layout, [a for _, a in named], meta, writer, writers)
    snapshot = SlotFile(str(tmp_path / "slot")).read()
    assert snapshot.commit == 9
    assert_same(snapshot, named, meta)


def test_shares_cover_every_array_once_in_about_equal_bytes():
    layout = Layout.of([(str(i), np.zeros(n, np.float32)) for i in range(20)
                        for n in [1000 * (i % 4 + 1)]])
    for writers in range(1, 8):
        shares = layout.shares(writers)
        assert sorted(i for share in shares for i in share) == list(range(20))
        sizes = [sum(layout.entries[i].nbytes for i in share) for share in shares]
        assert max(sizes) - min(sizes) <= 2 * 16000   # at most about one entry apart


def test_a_copy_cut_off_halfway_is_not_read(tmp_path):
    named = arrays(2)
    layout = Layout.of(named)
    slot = SlotFile(str(tmp_path / "slot"))
    write(slot, 4, named, b"four", 2)
    slot.write_share(6, layout, [a for _, a in named], b"six", 0, 2)   # writer 1 never comes
    assert SlotFile(str(tmp_path / "slot")).read() is None


def test_a_changed_layout_and_fewer_writers(tmp_path):
    slot = SlotFile(str(tmp_path / "slot"))
    write(slot, 1, arrays(1), b"one", 3)
    smaller = [("w", np.arange(5, dtype=np.float64))]
    write(SlotFile(str(tmp_path / "slot")), 3, smaller, b"three", 1)
    snapshot = SlotFile(str(tmp_path / "slot")).read()
    assert snapshot.commit == 3
    assert_same(snapshot, smaller, b"three")


def test_host_store_keeps_the_commit_before_an_interrupted_one(tmp_path):
    store = HostStore(str(tmp_path / "host"))
    for commit in (1, 2):
        named = arrays(commit)
        store.save(commit, Layout.of(named), [a for _, a in named], b"m%d" % commit, 0, 1)
    assert store.newest().commit == 2
    named3 = arrays(3)   # commit 3 goes to slot 1, over commit 1; its second writer dies
    store.save(3, Layout.of(named3), [a for _, a in named3], b"m3", 0, 2)
    newest = HostStore(str(tmp_path / "host")).newest()
    assert newest.commit == 2
    assert_same(newest, arrays(2), b"m2")


def test_missing_and_empty_files_hold_nothing(tmp_path):
    assert HostStore(str(tmp_path / "empty")).newest() is None
    (tmp_path / "empty" / "slot0").write_bytes(b"")
    (tmp_path / "empty" / "slot1").write_bytes(b"not a slot file at all" * 200)
    assert HostStore(str(tmp_path / "empty")).newest() is None


def test_shared_copy_is_replaced_whole(tmp_path):
    shared = SharedCopy(str(tmp_path / "shared"))
    for commit in (5, 6):
        named = arrays(commit)
        shared.save(commit, Layout.of(named), [a for _, a in named], b"s%d" % commit)
    assert os.listdir(tmp_path / "shared") == ["commit"]
    newest = shared.newest()
    assert newest.commit == 6
    assert_same(newest, arrays(6), b"s6")
