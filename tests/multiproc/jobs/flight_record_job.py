"""Flight records on a mismatch and on request: every rank reduces a few tensors, then one whose
shape differs on the last rank; each rank catches the MismatchError, whose record it has just
written, then writes one on request and checks what it holds."""
import json
import os

import numpy as np

import mpirep

mpirep.init()
rank, size = mpirep.rank(), mpirep.size()
for step in range(5):
    mpirep.allreduce(np.full(4, rank + step, np.float32), name=f"ok.{step}")
shape = 5 if rank == size - 1 else 4
try:
    mpirep.allreduce(np.zeros(shape, np.float32), name="odd")
    raise AssertionError("no MismatchError")
except mpirep.MismatchError as error:
    message = str(error)
path = os.path.join(os.environ["MPIREP_FLIGHT_RECORDER_DIR"], f"rank{rank}.json")
with open(path) as f:
    record = json.load(f)
assert record["reason"] == message, (record["reason"], message)
assert [e["name"] for e in record["recent"]] == [f"ok.{s}" for s in range(5)] + ["odd"]
assert record["recent"][-1]["status"] == "mismatch" and record["recent"][0]["status"] == "ok"
assert record["recent"][0]["bytes"] == 16 and record["hosts"][rank] and record["size"] == size
assert mpirep.dump_flight_record("checkpoint done") == path
with open(path) as f:
    assert json.load(f)["reason"] == "checkpoint done"
print(f"rank {rank}: records right", flush=True)
