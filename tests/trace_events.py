"""Reading timeline files (docs/timeline.md) as the Chrome trace-event format defines them, the
format that chrome://tracing and Perfetto read: a JSON array of events, each with a phase type
"ph", a name, a process and thread id, a timestamp "ts" in microseconds, "dur" for complete
events ("X"), matching "B"/"E" pairs per thread, a scope for instant events ("i"), and args for
metadata events ("M")."""
import json
from collections import defaultdict

# The phase types of the format that a timeline may use, and the fields each one needs.
REQUIRED = {
    "X": ("name", "pid", "tid", "ts", "dur"),
    "B": ("name", "pid", "tid", "ts"),
    "E": ("pid", "tid", "ts"),
    "i": ("name", "pid", "ts", "s"),
    "M": ("name", "pid", "args"),
}
METADATA_NAMES = {"process_name", "process_sort_index", "thread_name", "thread_sort_index"}


def load(path):
    """The events of a trace file, each checked against the format; AssertionError names the
    first event that breaks it."""
    with open(path) as f:
        events = json.load(f)
    assert isinstance(events, list), "a trace is a JSON array of events"
    open_spans = defaultdict(list)  # (pid, tid) -> names of B events not yet ended
    for event in events:
        assert isinstance(event, dict), event
        ph = event.get("ph")
        assert ph in REQUIRED, f"unknown phase type: {event}"
        for field in REQUIRED[ph]:
            assert field in event, f"{ph} event without {field}: {event}"
        assert isinstance(event["pid"], int) and isinstance(event.get("tid", 0), int), event
        if "name" in event:
            assert isinstance(event["name"], str) and event["name"], event
        if "args" in event:
            assert isinstance(event["args"], dict), event
        if ph != "M":
            assert isinstance(event["ts"], (int, float)) and event["ts"] >= 0, event
        if ph == "X":
            assert isinstance(event["dur"], (int, float)) and event["dur"] >= 0, event
        elif ph == "i":
            assert event["s"] in ("g", "p", "t"), event
        elif ph == "M":
            assert event["name"] in METADATA_NAMES, event
            key = "sort_index" if event["name"].endswith("sort_index") else "name"
            assert key in event["args"], event
        elif ph == "B":
            open_spans[event["pid"], event["tid"]].append(event["name"])
        elif ph == "E":
            assert open_spans[event["pid"], event["tid"]], f"E without its B: {event}"
            open_spans[event["pid"], event["tid"]].pop()
    assert not any(open_spans.values()), f"B events never ended: {dict(open_spans)}"
    return events


def tracks(events):
    """{tensor name: its complete events in time order}, by the thread names of the tracks."""
    names = {e["tid"]: e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "thread_name"}
    by_track = defaultdict(list)
    for event in events:
        if event["ph"] == "X":
            assert event["tid"] in names, f"an event on a track without a name: {event}"
            by_track[names[event["tid"]]].append(event)
    assert len(set(names.values())) == len(names), "two tracks with one name"
    return {name: sorted(spans, key=lambda e: e["ts"]) for name, spans in by_track.items()}


# Where each phase comes in an operation; every other name is a transfer, between PACK and UNPACK.
_PHASE_ORDER = {"NEGOTIATE": 0, "QUEUE": 1, "PACK": 2, "UNPACK": 4}
_TRANSFER_ORDER = 3


def operations(spans):
    """A track's events cut into one list per operation: each begins where a phase cannot
    follow the one before it (NEGOTIATE, QUEUE, PACK, the transfer, UNPACK, each optional: an
    operation that ran from the response cache has no NEGOTIATE or QUEUE)."""
    out = []
    for span in spans:
        order = _PHASE_ORDER.get(span["name"], _TRANSFER_ORDER)
        starts_new = not out or order <= _PHASE_ORDER.get(out[-1][-1]["name"], _TRANSFER_ORDER)
        if starts_new:
            out.append([])
        out[-1].append(span)
    return out


def cycles(events):
    return [e for e in events if e["ph"] == "i" and e["name"] == "CYCLE"]
