"""Training-like steps under autotuning (started with mpirep-run --autotune): every step
allreduces the same named tensors, whose values depend on rank, tensor and step, and checks
them against closed forms while rank 0 tries settings and every rank switches with it.

At the end: results were bit-identical on every rank; every rank saw the same set of settings
and ends on the same final ones; rank 0's log has a row per trial, and the settings every rank
saw are exactly the trials' and the final choice. Prints "autotune ok" on each rank."""
import csv
import hashlib
import os
import sys

import numpy as np

import mpirep
from mpirep import _core

TUNED = ("fusion_threshold", "cycle_time_ms", "chunk_bytes")
# (elements, dtype): a few large gradients, many small ones, two dtypes.
TENSORS = [(150_000, np.float32), (3, np.float64), (40_000, np.float32), (1, np.float32),
           (65_536, np.float64), (7, np.float32), (250_000, np.float32), (1_000, np.float64)]
MAX_STEPS = 2000

mpirep.init()
rank, n = mpirep.rank(), mpirep.size()
config = mpirep.session.config()
assert config.autotune == 1, f"rank {rank}: the launcher's --autotune did not reach the rank"
log_path = config.autotune_log
assert log_path, f"rank {rank}: the launcher's --autotune-log-file did not reach the rank"


def current():
    return tuple(float(_core.current_setting(name)) for name in TUNED)


def step_values(step, k, count, dtype, r):
    # small integers: every sum is exact in both dtypes
    return ((np.arange(count) % 13) + 3 * k + (step % 5) + r).astype(dtype)


def expected(step, k, count, dtype):
    return ((np.arange(count) % 13) * n + (3 * k + step % 5) * n + n * (n - 1) // 2).astype(dtype)


def all_finished():
    flags = mpirep.allgather(np.array([_core.autotune_finished()], np.int32), name="finished")
    return bool(flags.all())


digest = hashlib.sha256()
seen = set()
step = 0
while True:
    handles = [mpirep.allreduce_async(step_values(step, k, count, dtype, rank), op=mpirep.Sum, name=f"grad{k}")
               for k, (count, dtype) in enumerate(TENSORS)]
    for k, ((count, dtype), handle) in enumerate(zip(TENSORS, handles)):
        result = mpirep.synchronize(handle)
        want = expected(step, k, count, dtype)
        assert result.dtype == want.dtype and np.array_equal(result, want), \
            f"rank {rank}: grad{k} wrong at step {step} under settings {current()}"
        digest.update(result.tobytes())
    seen.add(current())
    step += 1
    if all_finished() or step == MAX_STEPS:
        break
assert step < MAX_STEPS, f"rank {rank}: autotuning did not finish in {MAX_STEPS} steps"

final = np.array(current())
finals = mpirep.allgather(final[None, :], name="final")
assert (finals == final).all(), f"rank {rank}: final settings differ between ranks: {finals}"
digests = mpirep.allgather(np.frombuffer(digest.digest(), np.uint8)[None, :], name="digests")
assert (digests == digests[0]).all(), f"rank {rank}: results differ between ranks"
seen_digest = hashlib.sha256(repr(sorted(seen)).encode()).digest()
seens = mpirep.allgather(np.frombuffer(seen_digest, np.uint8)[None, :], name="seen")
assert (seens == seens[0]).all(), f"rank {rank}: ranks saw different settings"

if rank == 0:
    with open(log_path) as f:
        rows = list(csv.DictReader(f))
    trials = [r for r in rows if r["trial"] != "final"]
    assert [r["trial"] for r in trials] == [str(i) for i in range(len(trials))], rows
    # from the defaults, pass 1: the start, 4 thresholds, 3 other cycle times, 3 other chunk
    # sizes; a second and third pass, when the one before found a better point
    assert 11 <= len(trials) <= 11 + 2 * 9 and rows[-1]["trial"] == "final", rows
    assert all(int(r["score_bytes_per_second"]) > 0 for r in trials), rows
    points = {tuple(float(r[name]) for name in TUNED) for r in rows}
    assert seen == points, f"settings seen {sorted(seen)} are not the log's {sorted(points)}"
    chosen = tuple(float(rows[-1][name]) for name in TUNED)
    best = max(trials, key=lambda r: int(r["score_bytes_per_second"]))
    assert chosen == tuple(float(best[name]) for name in TUNED) and tuple(final) == chosen, (chosen, rows)
    print(f"autotune: {step} steps, {len(trials)} trials, final {dict(zip(TUNED, chosen))}", flush=True)
mpirep.shutdown()
print(f"rank {rank}: autotune ok", flush=True)
sys.exit(0)
