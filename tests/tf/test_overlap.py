"""Gradient reductions that overlap backprop (docs/tensorflow.md, "Overlap"): the graphs
TensorFlow may rewrite stay in step across ranks, and the core receives a step's gradients in
backprop order, several at a time, fused."""

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
STEPS = 12
GRADIENT = re.compile(r"^gradients\.(\d+)\.0$")
MARKER = re.compile(r"^marker\.(\w+)\.(\d+)$")


@pytest.fixture(scope="module", autouse=True)
def op_library():
    build_op_library()


@pytest.mark.parametrize("ranks", [1, 2, 3, 4])
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
def test_gradients_reach_the_core_in_backprop_order_and_fused(tmp_path, ranks, keras):
    trace = tmp_path / "timeline.json"
    job = mpirun(ranks, [JOBS / "backprop_order_job.py", str(STEPS)], 300,
                 env={**keras_env(keras), "MPIREP_TIMELINE": str(trace)})
    assert job.returncode == 0 and "trained" in job.output, job.output[-6000:]
    steps = steps_from_trace(load(trace))
    for loop in ("fit", "loop"):
        in_order = fused = 0
        for step in range(2, STEPS):  # the first steps trace and warm up
            spans = steps[(loop, step)]
            submitted = {}
            for tensor, _, ts, _ in spans:
                index = int(GRADIENT.match(tensor).group(1))
                submitted[index] = min(ts, submitted.get(index, ts))
            assert sorted(submitted) == list(range(8)), (loop, step, spans)
            order = sorted(submitted, key=submitted.get)
            # Gradient 0, the first layer's kernel, is the last that backprop produces; in
            # program order (the variables' order, each collective waiting for the one before)
            # it would always come first. TensorFlow's scheduler may still run another
            # layer's gradient late, so the last layer's kernel (6) need not always precede it.
            assert order[0] != 0, (loop, step, order)
            in_order += order.index(6) < order.index(0)
            batches = {}
            for tensor, phase, ts, dur in spans:
                batches.setdefault((phase, ts, dur), set()).add(tensor)
            fused += any(len(tensors) > 1 for tensors in batches.values())
        assert in_order >= (STEPS - 2) // 2, (loop, in_order)
        assert fused >= 1, (loop, steps)  # never, when each waits for the one before
