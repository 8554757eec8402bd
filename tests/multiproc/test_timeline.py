"""Rank 0's timeline of real jobs (tests/multiproc/jobs/timeline_job.py), parsed and checked
against the Chrome trace-event format: each tensor on its own track, its phases in order and
without overlap, fused tensors sharing one ring pass, the rank that came last named, cycle marks
only when asked for; recorded from init on, or started and stopped at run time; a file that
parses after rank 0 was killed; and an init that fails on every rank when rank 0 cannot write
the file."""
import bisect

import pytest

import trace_events
from mpijob import mpirun

JOB = "tests/multiproc/jobs/timeline_job.py"
TIMEOUT_S = 90
SMALL = [f"small/{i}" for i in range(4)]
TRANSFERS = {"RING_ALLREDUCE", "SHM_ALLREDUCE"}


def allreduce_phase(ranks):
    """Every allreduce of several ranks, all on this host, goes through shared memory (the
    default shm_allreduce); a rank alone runs the ring."""
    return "SHM_ALLREDUCE" if ranks > 1 else "RING_ALLREDUCE"


def fused_phases(ranks):
    """Shared memory reads fused inputs where they lie and writes straight into the outputs; the
    ring of a rank alone unpacks them from the fusion buffer."""
    return ["SHM_ALLREDUCE"] if ranks > 1 else ["RING_ALLREDUCE", "UNPACK"]


def executed(operation):
    """The phases of an operation after its negotiation."""
    return [span for span in operation if span["name"] not in ("NEGOTIATE", "QUEUE")]


def check_step_tracks(events, ranks, steps):
    """The tracks of `steps` steps of timeline_job.py, and nothing else."""
    tracks = trace_events.tracks(events)
    assert set(tracks) == {*SMALL, "large"}, sorted(tracks)
    late = ranks - 1
    for name, spans in tracks.items():
        for earlier, later in zip(spans, spans[1:]):
            # one after the other: each phase ends where the next begins, to the nanosecond
            assert earlier["ts"] + earlier["dur"] <= later["ts"] + 1e-6, (name, earlier, later)
        operations = trace_events.operations(spans)
        assert len(operations) == steps, (name, operations)
        for index, operation in enumerate(operations):
            phases = [span["name"] for span in operation]
            # A repeat that ran from the response cache skipped rank 0: no NEGOTIATE or QUEUE.
            # The first step is always negotiated.
            negotiated = phases[:1] == ["NEGOTIATE"]
            assert negotiated or index > 0, (name, phases)
            large, alone, fused = [allreduce_phase(ranks)], [allreduce_phase(ranks)], fused_phases(ranks)
            if negotiated:
                large, alone, fused = (["NEGOTIATE", "QUEUE", *p] for p in (large, alone, fused))
            if name == "large":
                assert phases == large, (name, phases)
            elif ranks > 1:
                assert phases == fused, (name, phases)
            else:  # alone, nothing holds rank 0's tensors back: whatever was ready together fused
                assert phases in (fused, alone), (name, phases)
            if negotiated:
                assert operation[0]["args"]["last_rank"] == late, (name, operation[0])
            for span, following in zip(operation, operation[1:]):
                assert span["ts"] + span["dur"] == pytest.approx(following["ts"], abs=2e-3), (name, span, following)
            transfer = next(span for span in operation if span["name"] in TRANSFERS)
            assert transfer["args"]["tensor_bytes"] == (32768 * 8 if name == "large" else 5 * 4)
    if ranks > 1:
        # the small tensors of each step share one transfer
        for step in range(steps):
            per_tensor = [executed(trace_events.operations(tracks[name])[step]) for name in SMALL]
            for spans in per_tensor[1:]:
                assert [(s["name"], s["ts"], s["dur"]) for s in spans] == \
                    [(s["name"], s["ts"], s["dur"]) for s in per_tensor[0]]
            fused = next(span for span in per_tensor[0] if span["name"] in TRANSFERS)
            assert fused["args"]["fused_tensors"] == 4 and fused["args"]["fused_bytes"] == 80, fused
            large = executed(trace_events.operations(tracks["large"])[step])[0]
            assert large["args"]["fused_tensors"] == 1
            assert large["ts"] >= fused["ts"] + fused["dur"] or fused["ts"] >= large["ts"] + large["dur"]


def run(ranks, mode, tmp_path, *args, env=None):
    job = mpirun(ranks, [JOB, mode, tmp_path, *args], TIMEOUT_S, env=env)
    print(job.output[-3000:])
    return job


@pytest.mark.parametrize("ranks", [1, 2, 3])
def test_recorded_from_init(ranks, tmp_path):
    path = tmp_path / "init.json"
    job = run(ranks, "from_init", tmp_path, env={"HOROVOD_TIMELINE": str(path)})
    assert job.returncode == 0 and job.output.count("timeline job done") == ranks
    events = trace_events.load(path)
    check_step_tracks(events, ranks, steps=2)
    assert not trace_events.cycles(events), "cycle marks without mark_cycles"
    assert [p for p in tmp_path.iterdir()] == [path], "only rank 0 writes"


@pytest.mark.parametrize("ranks,mark_cycles", [(2, True), (3, False)])
def test_started_and_stopped_at_run_time(ranks, mark_cycles, tmp_path):
    job = run(ranks, "runtime", tmp_path, "1" if mark_cycles else "0")
    assert job.returncode == 0 and job.output.count("timeline job done") == ranks
    events = trace_events.load(tmp_path / "runtime.json")
    check_step_tracks(events, ranks, steps=2)  # neither before/ nor after/
    marks = trace_events.cycles(events)
    if mark_cycles:
        assert [m["args"]["cycle"] for m in marks] == list(range(1, len(marks) + 1))
        starts = sorted(m["ts"] for m in marks)
        # the executor works inside a round of the background thread: the last mark before each
        # of its phases began that round, and the next one begins after the phase ends
        for span in (e for e in events if e["ph"] == "X" and e["name"] not in ("NEGOTIATE", "QUEUE")):
            round_index = bisect.bisect_right(starts, span["ts"]) - 1
            assert round_index >= 0, span
            assert round_index + 1 == len(starts) or starts[round_index + 1] >= span["ts"] + span["dur"], span
    else:
        assert not marks
    second = trace_events.tracks(trace_events.load(tmp_path / "second.json"))
    assert list(second) == ["second"] and [s["name"] for s in second["second"]] == \
        ["NEGOTIATE", "QUEUE", allreduce_phase(ranks)]
    assert not (tmp_path / "early.json").exists() and not (tmp_path / "no").exists()


def test_rank_0_killed_leaves_a_file_that_parses(tmp_path):
    path = tmp_path / "crash.json"
    job = run(2, "crash", tmp_path, env={"MPIREP_TIMELINE": str(path)})
    assert job.returncode != 0 and not job.timed_out
    check_step_tracks(trace_events.load(path), 2, steps=1)


def test_unwritable_file_fails_init_on_every_rank(tmp_path):
    path = tmp_path / "missing" / "t.json"
    job = run(3, "bad_path", tmp_path, env={"MPIREP_TIMELINE": str(path)})
    assert job.returncode == 0
    assert job.output.count(f"init failed: rank 0: cannot open the timeline file '{path}': "
                            "No such file or directory") == 3, job.output
