"""Draw a window of an mpirep timeline (docs/timeline.md) as a PNG: one row per tensor, its phases
as coloured bars, the rank that came last at the end of each NEGOTIATE, cycle marks as lines.

    python benchmarks/plot_timeline.py TIMELINE.json OUT.png [--steps 2]

The window is the last --steps complete steps: a step runs from one start of the tensor that ran
most often to its next, and the window ends where its last operation starts.
"""
import argparse
import json

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402

COLOURS = {"NEGOTIATE": "#c9c9c9", "QUEUE": "#f2c14e", "PACK": "#f08a4b", "UNPACK": "#7fb069"}
TRANSFER_COLOUR = "#3d7ab8"  # RING_ALLREDUCE, CHAIN_BROADCAST, ...


def read(path):
    """(names by track id, complete events by track id in time order, cycle mark times)."""
    with open(path) as f:
        events = json.load(f)
    names = {e["tid"]: e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "thread_name"}
    spans = {}
    for event in events:
        if event["ph"] == "X":
            spans.setdefault(event["tid"], []).append(event)
    for track in spans.values():
        track.sort(key=lambda e: e["ts"])
    cycles = [e["ts"] for e in events if e["ph"] == "i" and e["name"] == "CYCLE"]
    return names, spans, cycles


def window(spans, steps):
    """(start, end) in µs of the last `steps` steps."""
    busiest = max(spans.values(), key=lambda track: sum(e["name"] == "NEGOTIATE" for e in track))
    starts = [e["ts"] for e in busiest if e["name"] == "NEGOTIATE"]
    if len(starts) <= steps:
        raise SystemExit(f"the busiest tensor ran {len(starts)} times: too few for {steps} steps")
    return starts[-steps - 1], starts[-1]


def plot(path, out, steps):
    names, spans, cycles = read(path)
    begin, end = window(spans, steps)
    shown = [tid for tid in sorted(spans) if any(e["ts"] < end and e["ts"] + e["dur"] > begin for e in spans[tid])]
    ms = lambda us: (us - begin) / 1000.0  # noqa: E731
    fig, ax = plt.subplots(figsize=(10, 0.45 * len(shown) + 1.6))
    for row, tid in enumerate(shown):
        for e in spans[tid]:
            if e["ts"] >= end or e["ts"] + e["dur"] <= begin:
                continue
            ax.broken_barh([(ms(e["ts"]), e["dur"] / 1000.0)], (row - 0.35, 0.7),
                           facecolors=COLOURS.get(e["name"], TRANSFER_COLOUR))
            if e["name"] == "NEGOTIATE":
                ax.text(ms(e["ts"] + e["dur"]), row - 0.42, f"r{e['args']['last_rank']}", fontsize=6,
                        ha="right", va="bottom")
    for ts in cycles:
        if begin <= ts <= end:
            ax.axvline(ms(ts), color="black", alpha=0.12, linewidth=0.6)
    ax.set_yticks(range(len(shown)), [names[tid] for tid in shown], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlim(ms(begin), ms(end))
    ax.set_xlabel("ms")
    transfers = sorted({e["name"] for tid in shown for e in spans[tid]} - set(COLOURS))
    legend = [Patch(color=c, label=p) for p, c in COLOURS.items()] + \
             [Patch(color=TRANSFER_COLOUR, label=" / ".join(transfers) or "transfer")]
    fig.legend(handles=legend, loc="lower center", ncol=len(legend), fontsize=8, frameon=False)
    ax.set_title(f"rank 0's timeline: the last {steps} steps (r = the rank that came last; lines = cycles)",
                 fontsize=9)
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    fig.savefig(out, dpi=120)
    plt.close(fig)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("timeline")
    parser.add_argument("out")
    parser.add_argument("--steps", type=int, default=2, help="operations of the busiest tensor to show")
    args = parser.parse_args()
    plot(args.timeline, args.out, args.steps)


if __name__ == "__main__":
    main()
