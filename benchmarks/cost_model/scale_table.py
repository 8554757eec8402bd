"""The model projected to 512 ranks: N hosts x k ranks per host over 25 Gbit/s and 100 Gbit/s
inter-host links, with mpirep's software costs fitted here to the shared-memory measurements
(fit.py, Fitted.inter_at: those costs per message and per byte, plus the wire's 8/rate) and
mpirep's defaults (the shared-memory collectives inside a host). Prints Markdown tables: the
scaling efficiency of a ResNet-50 step at 2, 8, 64 and 512 ranks; for 4 and 8 ranks per host,
the allreduce time of its gradient set and the efficiency of its step with and without overlap
and hierarchical allreduce; each efficiency beside the step's bound (alpha_beta.step_bound: what
no allreduce can beat); and the model beside the efficiencies Horovod published for 512 GPUs.

    python benchmarks/cost_model/scale_table.py [--per-host 4] [--fusion-threshold BYTES] [--shm FILE] ...
"""
import argparse

import alpha_beta as ab
from fit import add_file_arguments, fit_files
from units import human_bytes
from workloads import BACKWARD_FRACTION, WORKLOADS

RATES = {"25 Gbit/s": 25e9, "100 Gbit/s": 100e9}
MODES = {"no overlap": (False, False), "overlap": (True, False), "overlap + hier.": (True, True)}
# (hosts, ranks per host) of the rank counts the summary gives: 2 ranks on 2 hosts, the rest 4 to a host
RANK_LAYOUTS = [(2, 1), (2, 4), (16, 4), (128, 4)]


def projected_cluster(fitted, hosts, per_host, rate):
    # a real host has a core per rank: no oversubscription
    return ab.Cluster(hosts, per_host, fitted.intra, fitted.inter_at(rate), copy=fitted.copy, shm=fitted.shm)


def host_counts(per_host, max_ranks=512):
    counts, hosts = [], 1
    while hosts * per_host <= max_ranks:
        counts.append(hosts)
        hosts *= 2
    return counts


def efficiency(fitted, workload, hosts, per_host, rate, overlap, hierarchical, settings=ab.Settings()):
    cluster = projected_cluster(fitted, hosts, per_host, rate)
    return ab.training_step(workload.compute_seconds, BACKWARD_FRACTION, workload.tensor_bytes,
                            cluster, settings, overlap, hierarchical).efficiency


def allreduce_table(fitted, per_host, workload, settings):
    header = "| hosts x ranks | ranks | " + " | ".join(
        f"{r}, {m} ms" for r in RATES for m in ("flat", "hier.")) + " |"
    lines = [header, "|---|---:|" + "---:|" * 2 * len(RATES)]
    for hosts in host_counts(per_host):
        cells = []
        for rate in RATES.values():
            cluster = projected_cluster(fitted, hosts, per_host, rate)
            for hierarchical in (False, True):
                seconds = ab.gradient_round(workload.tensor_bytes, cluster, settings, hierarchical)[0]
                cells.append(f"{seconds * 1e3:.1f}")
        lines.append(f"| {hosts} x {per_host} | {hosts * per_host} | " + " | ".join(cells) + " |")
    return lines


def bound_efficiency(workload, hosts, rate):
    """The efficiency of a step at its bound: no allreduce does better (alpha_beta.step_bound)."""
    return workload.compute_seconds / ab.step_bound(workload.compute_seconds, BACKWARD_FRACTION,
                                                    workload.gradient_bytes, hosts, rate)


def ranks_table(fitted, workload, settings):
    columns = ["overlap", "overlap + hier.", "bound"]
    header = "| ranks | hosts x ranks | " + " | ".join(f"{r}, {m}" for r in RATES for m in columns) + " |"
    lines = [header, "|---:|---|" + "---:|" * len(RATES) * len(columns)]
    for hosts, per_host in RANK_LAYOUTS:
        cells = []
        for rate in RATES.values():
            cells += [f"{efficiency(fitted, workload, hosts, per_host, rate, *MODES[m], settings):.0%}"
                      for m in columns[:2]]
            cells.append(f"{bound_efficiency(workload, hosts, rate):.0%}")
        lines.append(f"| {hosts * per_host} | {hosts} x {per_host} | " + " | ".join(cells) + " |")
    return lines


def efficiency_table(fitted, per_host, workload, settings):
    columns = [*MODES, "bound"]
    header = "| hosts x ranks | ranks | " + " | ".join(f"{r}, {m}" for r in RATES for m in columns) + " |"
    lines = [header, "|---|---:|" + "---:|" * len(RATES) * len(columns)]
    for hosts in host_counts(per_host):
        cells = []
        for rate in RATES.values():
            cells += [f"{efficiency(fitted, workload, hosts, per_host, rate, *mode, settings):.0%}"
                      for mode in MODES.values()]
            cells.append(f"{bound_efficiency(workload, hosts, rate):.0%}")
        lines.append(f"| {hosts} x {per_host} | {hosts * per_host} | " + " | ".join(cells) + " |")
    return lines


def published_table(fitted, settings):
    lines = ["| model | gradients MiB | compute per step ms | " + " | ".join(MODES) +
             " | bound | Horovod, published |", "|---|---:|---:|" + "---:|" * (len(MODES) + 1) + "---:|"]
    for w in WORKLOADS:
        cells = [f"{efficiency(fitted, w, 128, 4, RATES['25 Gbit/s'], *mode, settings):.0%}"
                 for mode in MODES.values()]
        published = f"{w.horovod_512_efficiency:.0%}" if w.horovod_512_efficiency else "-"
        bound = f"{bound_efficiency(w, 128, RATES['25 Gbit/s']):.0%}"
        lines.append(f"| {w.name} | {w.gradient_bytes / 2**20:.1f} | {w.compute_seconds * 1e3:.0f} | "
                     + " | ".join(cells) + f" | {bound} | {published} |")
    return lines


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--per-host", type=int, action="append", help="ranks per host (default 4 and 8)")
    parser.add_argument("--fusion-threshold", type=int, default=ab.Settings().fusion_threshold,
                        help="bytes per fused buffer (default: mpirep's default)")
    add_file_arguments(parser)
    args = parser.parse_args()
    fitted = fit_files(args).fitted
    resnet, settings = WORKLOADS[0], ab.Settings(fusion_threshold=args.fusion_threshold)
    fusion = f"fusion threshold {human_bytes(settings.fusion_threshold)}"
    print(f"\nScaling efficiency of a {resnet.name} step ({resnet.compute_seconds * 1e3:.0f} ms of "
          f"compute, {fusion}):\n")
    print("\n".join(ranks_table(fitted, resnet, settings)))
    for per_host in args.per_host or [4, 8]:
        print(f"\nAllreduce of the {resnet.name} gradients ({resnet.gradient_bytes / 2**20:.1f} MiB, "
              f"{fusion}), {per_host} ranks per host:\n")
        print("\n".join(allreduce_table(fitted, per_host, resnet, settings)))
        print(f"\nScaling efficiency of a {resnet.name} step ({resnet.compute_seconds * 1e3:.0f} ms of "
              f"compute, {fusion}), {per_host} ranks per host:\n")
        print("\n".join(efficiency_table(fitted, per_host, resnet, settings)))
    print(f"\n512 ranks = 128 hosts x 4 over 25 Gbit/s, {fusion}, beside Horovod's 512-GPU figures:\n")
    print("\n".join(published_table(fitted, settings)))


if __name__ == "__main__":
    main()
