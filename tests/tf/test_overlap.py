"""Gradient reductions that overlap backprop (docs/tensorflow.md, "Overlap"): the graphs
TensorFlow may rewrite stay in step across ranks, and the core receives a step's gradients
without any of them waiting for another, several at a time, fused."""

import re

import pytest

pytest.importorskip("tensorflow")

from keras_versions import keras_cases, keras_env  # noqa: E402
from mpijob import REPO, assert_passed, build_op_library, mpirun  # noqa: E402
from trace_events import load, tracks  # noqa: E402

JOBS = REPO / "tests" / "tf" / "jobs"
# A collective that one rank dropped would leave the others waiting: this turns the wait into
# an error on every rank well inside the job's time limit.
STALL = {"MPIREP_STALL_SHUTDOWN_TIME_SECONDS": "10"}
STEPS = 5
GRADIENT = re.compile(r"^gradients\.(\d+)\.0$")
MARKER = re.compile(r"^marker\.(\w+)\.(\d+)$")


@pytest.fixture(scope="module", autouse=True)
def op_library():
    build_op_library()


# Even and odd ranks build different graphs: 2 ranks pair one of each, 3 two against one.
@pytest.mark.parametrize("ranks", [2, 3])
def test_collectives_stay_in_step_across_ranks_native(ranks):
    env = {**STALL, "MPIREP_TF_BRIDGE": "native"}
    assert_passed(mpirun(ranks, [JOBS / "overlap_job.py"], 300, env=env), ranks)


def test_collectives_stay_in_step_across_ranks_numpy_bridge():
    env = {**STALL, "MPIREP_TF_BRIDGE": "numpy"}
    assert_passed(mpirun(2, [JOBS / "overlap_job.py"], 300, env=env), 2)


def steps_from_trace(events):
    """{(loop, step): [(tensor, phase, ts, dur)]}: the gradient events that fall between the
    step's marker and the one before it."""
    spans = [(tensor, e["name"], e["ts"], e["dur"])
             for tensor, events_of_tensor in tracks(events).items() for e in events_of_tensor]
    markers = {}
    for tensor, _, ts, dur in spans:
        match = MARKER.match(tensor)
        if match:
            key = (match.group(1), int(match.group(2)))
            begin, end = markers.get(key, (ts, ts + dur))
            markers[key] = (min(begin, ts), max(end, ts + dur))
    bounds = sorted(markers.items(), key=lambda item: item[1])
    steps, previous_end = {}, float("-inf")
    for key, (begin, end) in bounds:
        steps[key] = [s for s in spans if GRADIENT.match(s[0]) and previous_end <= s[2] < begin]
        previous_end = end
    return steps


@pytest.mark.parametrize("ranks,keras", keras_cases([(2, "keras3"), (3, "tf_keras")]))
def test_gradients_reach_the_core_together_and_fuse(tmp_path, ranks, keras):
    """Every step, rank 0 submits all its gradients before the other ranks start theirs
    (backprop_order_job.py), so none can end before all are submitted, unless each waited for
    the one before it; and the ones held back for the cycle time fuse. Which gradient backprop
    produces first is the scheduler's choice and is not asserted. The response cache is off so
    that every gradient's NEGOTIATE phase begins when rank 0 submitted it."""
    trace = tmp_path / "timeline.json"
    env = {**keras_env(keras), "MPIREP_TIMELINE": str(trace), "MPIREP_CACHE_CAPACITY": "0",
           "MPIREP_CYCLE_TIME": "60000"}
    job = mpirun(ranks, [JOBS / "backprop_order_job.py", str(STEPS)], 300, env=env)
    assert job.returncode == 0 and "trained" in job.output, job.output[-6000:]
    steps = steps_from_trace(load(trace))
    for loop in ("fit", "loop"):
        for step in range(1, STEPS):  # the first step traces
            spans = steps[(loop, step)]
            submitted, ended = {}, {}
            for tensor, phase, ts, dur in spans:
                index = int(GRADIENT.match(tensor).group(1))
                if phase == "NEGOTIATE":
                    submitted[index] = ts
                ended[index] = max(ts + dur, ended.get(index, ts))
            assert sorted(submitted) == sorted(ended) == list(range(8)), (loop, step, spans)
            assert max(submitted.values()) < min(ended.values()), (loop, step, spans)
            batches = {}
            for tensor, phase, ts, dur in spans:
                if phase not in ("NEGOTIATE", "QUEUE"):
                    batches.setdefault((phase, ts, dur), set()).add(tensor)
            assert any(len(tensors) > 1 for tensors in batches.values()), (loop, step, spans)
