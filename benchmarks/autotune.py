"""Autotuning on the ResNet-50 gradient round (resnet50_round.py's 214 tensors, issued as async
allreduces each round): the steady-state round time after autotuning, from the defaults and from
a deliberately bad start, against the defaults and the bad start left as they are, in the same
run. Each repeat runs the four in turn (so that drift hits them alike), each on a fresh mpirep;
the table gives medians over the repeats of each one's median round time. Run under mpirun:
`mpirun -np 2 python benchmarks/autotune.py`."""
import argparse
import math
import statistics
import tempfile
from pathlib import Path

import numpy as np
from mpi4py import MPI

import mpirep
from common import exact_floats, print_table, settle, timed, write_json
from mpirep import _core
from resnet50_shapes import SHAPES

TOTAL = sum(math.prod(s) for s in SHAPES)
TUNED = ("fusion_threshold", "cycle_time_ms", "chunk_bytes")
BAD_START = {"fusion_threshold": 64 << 10, "cycle_time_ms": 20, "chunk_bytes": 4 << 10}
CASES = {  # name: (settings, whether it autotunes)
    "defaults": ({}, False),
    "autotuned from defaults": ({}, True),
    "bad start": (BAD_START, False),
    "autotuned from bad start": (BAD_START, True),
}


def parse_args():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--json", help="write the results to this file (rank 0)")
    p.add_argument("--repeats", type=int, default=3, help="runs of each case")
    p.add_argument("--rounds", type=int, default=7, help="timed rounds per run, after tuning")
    # shorter trials than the settings' defaults, so that a run takes minutes
    p.add_argument("--steps-per-sample", type=int, default=2)
    p.add_argument("--warmup-samples", type=int, default=1)
    p.add_argument("--samples-per-trial", type=int, default=3)
    p.add_argument("--max-tuning-rounds", type=int, default=400)
    p.add_argument("--warm-rounds", type=int, default=100,
                   help="rounds every case runs before it is timed (tuned cases: at least)")
    return p.parse_args()


class Round:
    """The 214 gradients, last layer first, as in resnet50_round.py; checked once per run."""

    def __init__(self, comm):
        self.flat = exact_floats(comm.rank, TOTAL)
        self.reference = np.empty_like(self.flat)
        comm.Allreduce(self.flat, self.reference, op=MPI.SUM)
        self.offsets = np.cumsum([0] + [math.prod(s) for s in SHAPES])
        self.grads = [self.flat[a:b].reshape(s) for a, b, s in zip(self.offsets[:-1], self.offsets[1:], SHAPES)]
        self.order = list(reversed(range(len(self.grads))))

    def __call__(self):
        handles = [mpirep.allreduce_async(self.grads[i], op=mpirep.Sum, name=f"grad.{i}") for i in self.order]
        return [mpirep.synchronize(h) for h in handles]

    def check(self, what):
        for i, r in zip(self.order, self()):
            assert np.array_equal(r.ravel(), self.reference[self.offsets[i]:self.offsets[i + 1]]), \
                f"{what}: tensor {i} differs"


def run_case(comm, round_, settings, autotune, args, log):
    """One fresh mpirep: tune to the end if asked, then time rounds. Returns the median round
    seconds, the settings in force at the end, and the rounds tuning took."""
    extra = {"autotune": True, "autotune_log": str(log), "autotune_steps_per_sample": args.steps_per_sample,
             "autotune_warmup_samples": args.warmup_samples,
             "autotune_samples_per_trial": args.samples_per_trial} if autotune else {}
    mpirep.init(**settings, **extra)
    tuning_rounds = 0
    while autotune and not comm.allreduce(_core.autotune_finished(), op=MPI.LAND):
        assert tuning_rounds < args.max_tuning_rounds, "autotuning did not finish"
        round_()
        tuning_rounds += 1
    # as many rounds before timing in every case: a runtime's first rounds are slower (memory
    # first touched, the response cache filling) whatever its settings
    for _ in range(args.warm_rounds - tuning_rounds):
        round_()
    round_.check("after tuning" if autotune else "untuned")
    settle(comm, round_)
    seconds = statistics.median(timed(comm, round_) for _ in range(args.rounds))
    final = {name: _core.current_setting(name) for name in TUNED}
    mpirep.shutdown()
    return seconds, final, tuning_rounds


def main():
    args = parse_args()
    comm = MPI.COMM_WORLD.Dup()
    round_ = Round(comm)
    medians = {name: [] for name in CASES}
    finals, tuning = {}, {name: [] for name in CASES}
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "autotune.csv"
        for _ in range(args.repeats):
            for name, (settings, autotune) in CASES.items():
                seconds, final, rounds = run_case(comm, round_, settings, autotune, args, log)
                medians[name].append(seconds)
                finals.setdefault(name, []).append(final)
                tuning[name].append(rounds)
    t = {name: statistics.median(s) for name, s in medians.items()}
    rows = [[name, f"{t[name] * 1e3:.1f}", f"{t[name] / t['defaults']:.2f}",
             str(statistics.median(tuning[name])) if CASES[name][1] else "",
             "; ".join(" ".join(f[k] for k in TUNED) for f in finals[name])]
            for name in CASES]
    print_table(comm, f"Autotuning, ResNet-50 gradient round ({len(SHAPES)} tensors, "
                f"{TOTAL * 4 / 2**20:.1f} MiB), np={comm.size}, median of {args.repeats} runs x "
                f"{args.rounds} rounds; settings: fusion_threshold cycle_time_ms chunk_bytes per run",
                ["case", "round ms", "/ defaults", "tuning rounds", "settings at the end"], rows)
    write_json(comm, args.json, {"np": comm.size, "repeats": args.repeats, "rounds": args.rounds,
                                 "seconds": t, "runs": medians, "final_settings": finals,
                                 "tuning_rounds": tuning,
                                 "ratio_to_defaults": {n: t[n] / t["defaults"] for n in CASES}})


if __name__ == "__main__":
    main()
