"""Fit the model to the measurements, then set its prediction beside every configuration
measured here: 1 host x 2, 3, 4 ranks, on the ring and through the shared-memory allreduce;
2 emulated hosts x 1 and x 2 ranks, flat and hierarchical (its stages in the host on the ring
and in shared memory), over the shaped link; each as an allreduce sweep and as a ResNet-50
gradient round. Prints the fitted parameters and the tables (Markdown), and fails (exit 1)
naming every prediction more than 25% off.

    python benchmarks/cost_model/check.py [--shm FILE] [--hosts FILE] [--copy FILE] [--tolerance 0.25]
"""
import argparse
import json
import sys

from fit import INTER_FIT, INTRA_FIT, SHM_FIT, add_file_arguments, fit_files
from units import human_bytes


def over_passes(meta):
    return "one pass" if meta["passes"] == 1 else f"median of {meta['passes']} passes"


def fitted_lines(fitted, shm_meta, host_meta):
    i, s, e = fitted.intra, fitted.shm, fitted.inter
    return [
        "| link | fitted on | alpha, us per message | beta, ns per byte | bandwidth, GB/s |",
        "|---|---|---:|---:|---:|",
        f"| intra (the ring over MPI's shared memory) | {INTRA_FIT}, {over_passes(shm_meta)} | "
        f"{i.alpha * 1e6:.1f} | {i.beta * 1e9:.3f} | {1e-9 / i.beta:.2f} |",
        f"| shm (the shared-memory collectives; alpha per wait, beta per byte of the buffer) | "
        f"{SHM_FIT}, {over_passes(shm_meta)} | {s.alpha * 1e6:.1f} | {s.beta * 1e9:.3f} | {1e-9 / s.beta:.2f} |",
        f"| inter ({host_meta['rate']} emulated link) | {INTER_FIT}, {over_passes(host_meta)} "
        f"| {e.alpha * 1e6:.1f} | "
        f"{e.beta * 1e9:.3f} | {1e-9 / e.beta:.3f} |",
        f"| memory copy (fusion's packing) | measured by memcpy.py, not fitted | | "
        f"{fitted.copy * 1e9:.3f} | {1e-9 / fitted.copy:.2f} |",
    ]


def what(point):
    return f"allreduce {human_bytes(point.nbytes)}" if point.kind == "sweep" else "ResNet-50 round"


def check_lines(points, fitted, tolerance):
    """The check's table (Markdown lines), and its misses: (point, predicted seconds, error) for
    each prediction more than `tolerance` off."""
    lines = ["| configuration | what | load average | predicted ms | measured ms | error |",
             "|---|---|---:|---:|---:|---:|"]
    misses = []
    for p in sorted(points, key=lambda p: (p.layout.hosts, p.layout.per_host, p.layout.hierarchical,
                                           p.layout.shm, p.kind, p.nbytes)):
        predicted = fitted.predict(p)
        error = predicted / p.seconds - 1
        fitted_on = p.kind == "sweep" and p.layout in (INTRA_FIT, SHM_FIT, INTER_FIT)
        mark = " (fitted)" if fitted_on else ""
        lines.append(f"| {p.layout}{mark} | {what(p)} | {p.load_average:.1f} | {predicted * 1e3:.3f} "
                     f"| {p.seconds * 1e3:.3f} | {error:+.0%} |")
        if abs(error) > tolerance:
            misses.append((p, predicted, error))
    return lines, misses


def conditions(meta):
    where = "shared memory" if meta["where"] == "shm" else f"2 emulated hosts, link shaped to {meta['rate']}"
    return (f"{where}: {meta['started']['utc']} to {meta['ended']['utc']}, {meta['cores']} cores, "
            f"1-minute load average {meta['started']['load_average']:.1f} at the start, "
            f"{meta['ended']['load_average']:.1f} at the end")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_file_arguments(parser)
    parser.add_argument("--tolerance", type=float, default=0.25)
    parser.add_argument("--json", help="write the fitted parameters here")
    args = parser.parse_args()
    m = fit_files(args)
    fitted = m.fitted
    print("Measured:", conditions(m.shm_meta), ";", conditions(m.host_meta))
    print("\n".join(["", *fitted_lines(fitted, m.shm_meta, m.host_meta), ""]))
    lines, misses = check_lines(m.shm_points + m.host_points, fitted, args.tolerance)
    print("\n".join(lines))
    failures = [f"{p.layout}, {what(p)}: predicted {predicted * 1e3:.3f} ms, measured {p.seconds * 1e3:.3f} ms "
                f"({error:+.0%})" for p, predicted, error in misses]
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"intra": vars(fitted.intra), "shm": vars(fitted.shm), "inter": vars(fitted.inter),
                       "inter_rate_bits": fitted.inter_rate, "machine_cores": fitted.machine_cores,
                       "copy_s_per_byte": fitted.copy}, f, indent=1)
    if failures:
        print(f"\nFAIL: {len(failures)} of {len(lines) - 2} predictions more than "
              f"{args.tolerance:.0%} off:\n  " + "\n  ".join(failures))
        sys.exit(1)
    print(f"\nPASS: all {len(lines) - 2} predictions within {args.tolerance:.0%}")


if __name__ == "__main__":
    main()
