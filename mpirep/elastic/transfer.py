"""Broadcasting bytes, Python objects and whole snapshots with mpirep's numpy collectives."""
import pickle

import numpy as np

import mpirep
from mpirep.elastic.layout import Layout
from mpirep.elastic.slot_file import Snapshot


def broadcast_bytes(data, root_rank, name):
    """``root_rank``'s ``data`` (bytes) on every rank; other ranks pass None."""
    mine = mpirep.rank() == root_rank
    length = mpirep.broadcast(np.array([len(data) if mine else 0], np.int64), root_rank,
                              name=f"{name}.length")
    payload = np.frombuffer(data, np.uint8) if mine else np.zeros(int(length[0]), np.uint8)
    return mpirep.broadcast(payload, root_rank, name=f"{name}.bytes").tobytes()


def broadcast_object(obj, root_rank=0, name="elastic.object"):
    """``root_rank``'s ``obj`` (anything picklable) on every rank."""
    data = pickle.dumps(obj) if mpirep.rank() == root_rank else None
    return pickle.loads(broadcast_bytes(data, root_rank, name))


def broadcast_snapshot(snapshot, root_rank, name="elastic.snapshot"):
    """``root_rank``'s snapshot on every rank (others pass None), arrays and all."""
    mine = mpirep.rank() == root_rank
    head = pickle.dumps((snapshot.commit, snapshot.layout.to_json(), bytes(snapshot.meta))) \
        if mine else None
    commit, layout_json, meta = pickle.loads(broadcast_bytes(head, root_rank, f"{name}.head"))
    layout = Layout.from_json(layout_json)
    handles = []
    for index, entry in enumerate(layout.entries):
        array = snapshot.arrays[index] if mine else np.zeros(entry.shape, entry.dtype)
        handles.append(mpirep.broadcast_async(np.ascontiguousarray(array), root_rank,
                                              name=f"{name}.{index}"))
    return Snapshot(commit, layout, [mpirep.synchronize(h) for h in handles], meta)
