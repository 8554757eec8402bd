"""Draw the model into a PNG: on the left the projected scaling efficiency of a ResNet-50 step
against the number of ranks (4 per host; 25 and 100 Gbit/s; without overlap, with overlap,
with overlap and hierarchical allreduce); on the right every check of check.py, predicted
against measured, with the +-25% band.

    python benchmarks/cost_model/draw.py [--out docs/benchmarks-cost-model.png] [--shm FILE] ...
"""
import argparse
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

import alpha_beta as ab  # noqa: E402
from fit import add_file_arguments, fit_files  # noqa: E402
from scale_table import MODES, RATES, efficiency, host_counts  # noqa: E402
from units import human_bytes  # noqa: E402
from workloads import WORKLOADS  # noqa: E402

DOCS = Path(__file__).resolve().parents[2] / "docs"
PNG = "benchmarks-cost-model.png"
PER_HOST = 4


def draw(measured, out):
    """measured: the measurements and their fit (fit.Measured)."""
    fitted, shm_points, host_points = measured.fitted, measured.shm_points, measured.host_points
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.8))

    resnet = WORKLOADS[0]
    hosts = host_counts(PER_HOST)
    ranks = [h * PER_HOST for h in hosts]
    for (rate_name, rate), colour in zip(RATES.items(), ("tab:red", "tab:blue")):
        for (mode, flags), style in zip(MODES.items(), (":", "--", "-")):
            left.plot(ranks, [efficiency(fitted, resnet, h, PER_HOST, rate, *flags) for h in hosts],
                      style, marker="o", color=colour, label=f"{rate_name}, {mode}")
    left.set_xscale("log", base=2)
    left.set_xticks(ranks, [str(r) for r in ranks])
    left.set_ylim(0, 1.02)
    left.set_xlabel(f"ranks ({PER_HOST} per host)")
    left.set_ylabel("scaling efficiency")
    left.set_title(f"model: {resnet.name} step, {resnet.compute_seconds * 1e3:.0f} ms compute, "
                   f"fusion {human_bytes(ab.Settings().fusion_threshold)}", fontsize=10)
    left.grid(True, alpha=0.3)
    left.legend(fontsize=8)

    for points, marker in ((shm_points, "o"), (host_points, "s")):
        for layout in sorted({p.layout for p in points}, key=str):
            chosen = [p for p in points if p.layout == layout]
            right.scatter([p.seconds * 1e3 for p in chosen],
                          [fitted.predict(p) * 1e3 for p in chosen],
                          marker=marker, label=str(layout), s=18)
    low = min(p.seconds for p in shm_points + host_points) * 1e3 / 2
    high = max(p.seconds for p in shm_points + host_points) * 1e3 * 2
    line = [low, high]
    right.plot(line, line, "k-", lw=0.8)
    right.fill_between(line, [x * 0.75 for x in line], [x * 1.25 for x in line], color="grey", alpha=0.2,
                       label="within 25%")
    right.set_xscale("log")
    right.set_yscale("log")
    right.set_xlabel("measured ms")
    right.set_ylabel("predicted ms")
    right.set_title(f"check: shared memory and 2 hosts over {measured.host_meta['rate']}",
                    fontsize=10)
    right.grid(True, which="both", alpha=0.3)
    right.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default=DOCS / PNG)
    add_file_arguments(parser)
    args = parser.parse_args()
    draw(fit_files(args), args.out)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
