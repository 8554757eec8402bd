"""Rank program of the elastic cluster tests that need no TensorFlow: an ObjectState holding a
numpy vector, updated by an allreduce and committed every step.  Prints `ELASTIC <json>` events
like elastic_keras_job.py (start, reset, resume, step, final).  --raise-at N: rank 1 raises
ValueError at step N, a bug that elastic mode must not retry."""
import argparse
import json
import os
import socket
import sys
import time

import numpy as np

import mpirep
import mpirep.elastic as elastic

GENERATION = int(os.environ.get("MPIREP_ELASTIC_GENERATION", "0"))


def say(event, **fields):
    line = json.dumps({"event": event, "gen": GENERATION, "rank": mpirep.rank(),
                       "size": mpirep.size(), "time": time.time(), **fields})
    sys.stdout.write(f"ELASTIC {line}\n")
    sys.stdout.flush()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--step-seconds", type=float, default=0.1)
    parser.add_argument("--raise-at", type=int)
    args = parser.parse_args()
    mpirep.init()
    say("start", host=socket.gethostname(), pid=os.getpid())
    state = elastic.ObjectState(w=np.zeros(8), step=0)
    state.register_reset_callbacks([lambda: say("reset")])

    @elastic.run
    def train(state):
        say("resume", step=state.step, w=state.w.tolist())
        while state.step < args.steps:
            if state.step == args.raise_at and mpirep.rank() == 1:
                raise ValueError(f"bad batch at step {state.step}")
            contribution = np.arange(8.0) * (mpirep.rank() + 1) + state.step
            state.w = state.w + mpirep.allreduce(contribution, op=mpirep.Sum)
            state.step += 1
            state.commit()
            say("step", step=state.step, w=state.w.tolist())
            time.sleep(args.step_seconds)

    train(state)
    say("final", step=state.step, w=state.w.tolist())


if __name__ == "__main__":
    main()
