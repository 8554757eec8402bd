"""Fit the model to the measurements, then set its prediction beside every configuration
measured here: 1 host x 2, 3, 4 ranks on shared memory; 2 emulated hosts x 1 and x 2 ranks,
flat and hierarchical, over the shaped link; each as an allreduce sweep and as a ResNet-50
gradient round. Prints the fitted parameters and the tables (Markdown), and fails (exit 1)
naming every prediction more than 25% off.

    python benchmarks/cost_model/check.py [--shm FILE] [--hosts FILE] [--copy FILE] [--tolerance 0.25]
"""
import argparse
import json
import sys

from fit import INTER_FIT, INTRA_FIT, add_file_arguments, fit_files
from units import human_bytes


def fitted_lines(fitted, shm_meta, host_meta):
    i, e = fitted.intra, fitted.inter
    return [
        "| link | fitted on | alpha, us per message | beta, ns per byte | bandwidth, GB/s |",
        "|---|---|---:|---:|---:|",
        f"| intra (shared memory) | {INTRA_FIT}, median of {shm_meta['passes']} passes | "
        f"{i.alpha * 1e6:.1f} | {i.beta * 1e9:.3f} | {1e-9 / i.beta:.2f} |",
        f"| inter ({host_meta['rate']} emulated link) | {INTER_FIT}, median of {host_meta['passes']} passes "
        f"| {e.alpha * 1e6:.1f} | "
        f"{e.beta * 1e9:.3f} | {1e-9 / e.beta:.3f} |",
        f"| memory copy (fusion's packing) | measured by memcpy.py, not fitted | | "
        f"{fitted.copy * 1e9:.3f} | {1e-9 / fitted.copy:.2f} |",
    ]


def check_lines(points, fitted, tolerance):
    lines = ["| configuration | what | load average | predicted ms | measured ms | error |",
             "|---|---|---:|---:|---:|---:|"]
    failures = []
    for p in sorted(points, key=lambda p: (p.layout.hosts, p.layout.per_host, p.layout.hierarchical,
                                           p.kind, p.nbytes)):
        predicted = fitted.predict(p)
        error = predicted / p.seconds - 1
        what = f"allreduce {human_bytes(p.nbytes)}" if p.kind == "sweep" else "ResNet-50 round"
        fitted_on = p.kind == "sweep" and p.layout in (INTRA_FIT, INTER_FIT)
        mark = " (fitted)" if fitted_on else ""
        lines.append(f"| {p.layout}{mark} | {what} | {p.load_average:.1f} | {predicted * 1e3:.3f} "
                     f"| {p.seconds * 1e3:.3f} | {error:+.0%} |")
        if abs(error) > tolerance:
            failures.append(f"{p.layout}, {what}: predicted {predicted * 1e3:.3f} ms, measured "
                            f"{p.seconds * 1e3:.3f} ms ({error:+.0%})")
    return lines, failures


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
    lines, failures = check_lines(m.shm_points + m.host_points, fitted, args.tolerance)
    print("\n".join(lines))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"intra": vars(fitted.intra), "inter": vars(fitted.inter),
                       "inter_rate_bits": fitted.inter_rate, "machine_cores": fitted.machine_cores,
                       "copy_s_per_byte": fitted.copy}, f, indent=1)
    if failures:
        print(f"\nFAIL: {len(failures)} of {len(lines) - 2} predictions more than "
              f"{args.tolerance:.0%} off:\n  " + "\n  ".join(failures))
        sys.exit(1)
    print(f"\nPASS: all {len(lines) - 2} predictions within {args.tolerance:.0%}")


if __name__ == "__main__":
    main()
