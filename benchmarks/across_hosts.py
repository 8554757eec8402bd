"""The cross-host suite: two emulated hosts (dev/cluster) joined by a link shaped to each rate in
turn, and on it

  * the allreduce sweep of across_hosts_sweep.py at 2 hosts x 2 ranks: mpirep's flat ring, its
    hierarchical allreduce and MPI_Allreduce, timed in turns within one job, with the bytes
    each host sent across the link;
  * scaling efficiency of 2 hosts against 1 for Keras training (tf_keras_cnn.py): images/sec
    at 2 hosts x K ranks over twice those at 1 host x K, for K = 1 and 2.

It brings the hosts up, writes docs/benchmarks-across-hosts.png, replaces the "Across hosts"
section of docs/benchmarks.md, and takes the hosts down again. As root, from the repository root:

    python benchmarks/across_hosts.py [--rates 1gbit,10gbit] [--rounds 3]

Set MPIREP_CLUSTER_STATE, MPIREP_HOSTS_PREFIX and MPIREP_HOSTS_NET (dev/cluster/README.md) to
keep clear of other emulated hosts on the machine.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from doc_section import replace_section
from plot import plot_across_hosts
from units import human_bytes

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
CLUSTER = ROOT / "dev" / "cluster"
DOC = ROOT / "docs" / "benchmarks.md"
PNG = ROOT / "docs" / "benchmarks-across-hosts.png"
SECTION = "## Across hosts"
CNN_ARGS = ["--steps", "15", "--epochs", "3"]  # the first epoch (tracing) is not timed
TIMEOUT_S = 900


def cluster(script, *args):
    subprocess.run([str(CLUSTER / script), *args], check=True)


def on_hosts(hosts, per_host, script, out, *args):
    """Runs a benchmark script with `per_host` ranks on each of `hosts` hosts; its JSON."""
    cluster("mpirun-hosts", "-n", str(hosts), "-k", str(per_host), "-t", str(TIMEOUT_S),
            sys.executable, str(HERE / script), "--json", str(out), *args)
    return json.loads(out.read_text())


def measure(rates, rounds, tmp):
    """{rate: {"sweep": ..., "cnn": {(hosts, per_host): images/sec}}}. A job on one host does
    not touch the link, so the 1-host CNN runs once, unshaped, and serves every rate."""
    one_host = {(1, k): on_hosts(1, k, "tf_keras_cnn.py", tmp / f"cnn-1x{k}.json",
                                 *CNN_ARGS)["images_per_sec"] for k in (1, 2)}
    results = {}
    for rate in rates:
        cluster("shape", rate)
        sweep = on_hosts(2, 2, "across_hosts_sweep.py", tmp / f"sweep-{rate}.json",
                         "--rounds", str(rounds))
        cnn = dict(one_host)
        for k in (1, 2):
            cnn[2, k] = on_hosts(2, k, "tf_keras_cnn.py", tmp / f"cnn-2x{k}-{rate}.json",
                                 *CNN_ARGS)["images_per_sec"]
        results[rate] = {"sweep": sweep, "cnn": cnn}
    cluster("shape", "off")
    return results


def ratio_cell(r):
    return f"{r['median']:.2f} ({r['min']:.2f}-{r['max']:.2f})"


def sweep_table(sweep):
    lines = ["| size | hierarchical / flat | MPI_Allreduce / flat | bytes across per host "
             "(flat, hierarchical, MPI) |", "|---|---|---|---|"]
    for row in sweep["rows"]:
        across = "; ".join(
            f"{max(row['methods'][m]['across_per_host']):.2f}x"
            for m in ("flat", "hierarchical", "mpi"))
        lines.append(f"| {human_bytes(row['bytes'])} | {ratio_cell(row['hierarchical_over_flat'])} "
                     f"| {ratio_cell(row['mpi_over_flat'])} | {across} |")
    return lines


def scaling_table(results):
    lines = ["| link | 2 hosts x 1 over 2 x (1 host x 1) | 2 hosts x 2 over 2 x (1 host x 2) |",
             "|---|---|---|"]
    for rate, result in results.items():
        cnn = result["cnn"]
        cells = [f"{cnn[2, k] / (2 * cnn[1, k]):.2f}" for k in (1, 2)]
        lines.append(f"| {rate} | {' | '.join(cells)} |")
    return lines


def section(results, rounds, load):
    lines = [SECTION, "",
             "Measured by `python benchmarks/across_hosts.py` on two emulated hosts of "
             "`dev/cluster` (network namespaces on one machine of "
             f"{os.cpu_count()} cores, each host's outgoing traffic limited by `dev/cluster/shape`"
             "). Every figure is a ratio of two measurements taken in the same run of the suite. "
             f"The 1-minute load average was {load[0]:.1f} when the run began and "
             f"{load[1]:.1f} when it ended.", "",
             "### Allreduce (float32, Sum) at 2 hosts x 2 ranks", "",
             f"The three methods take turns in {rounds} rounds within one job. A cell gives "
             "the median over the rounds of each round's ratio of median times (< 1: faster "
             "than mpirep's flat ring), and the range over rounds. The bytes across are what "
             "each host sent on its link per allreduce, over the buffer's size: 2(n-1)/n = 1.5x "
             "for a ring over all 4 ranks, 2(h-1)/h = 1x once the ranks of a host reduce "
             "together first.", "",
             "![allreduce time against the flat ring](benchmarks-across-hosts.png)", ""]
    for rate, result in results.items():
        lines += [f"#### {rate}", "", *sweep_table(result["sweep"]), ""]
    lines += ["### Scaling efficiency of 2 hosts against 1", "",
              "Keras training of the small CNN of `tf_keras_cnn.py` (images/sec, every rank "
              "with one intra-op thread), at 2 hosts over twice the rate at 1 host with as many "
              "ranks per host; 1 would be perfect scaling. Each layout is its own job, the 1-host "
              "ones run once, unshaped, since they do not use the link. The emulated hosts share the "
              "machine's cores, so with 2 ranks per host the ranks outnumber the cores and the "
              "ratio measures the CPU as much as the link.", "",
              *scaling_table(results), ""]
    return lines


def write_section(lines):
    """Replaces the Across hosts section of docs/benchmarks.md, or appends one."""
    DOC.write_text(replace_section(DOC.read_text(), SECTION, "\n".join(lines)))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rates", default="1gbit,10gbit", help="tc rates, comma-separated")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of the allreduce sweep")
    parser.add_argument("--keep-hosts", action="store_true", help="leave the hosts up")
    args = parser.parse_args()
    rates = args.rates.split(",")
    load_before = os.getloadavg()[0]
    cluster("hosts-up", "2")
    try:
        with tempfile.TemporaryDirectory() as tmp:
            results = measure(rates, args.rounds, Path(tmp))
    finally:
        if not args.keep_hosts:
            cluster("hosts-down")
    plot_across_hosts({rate: r["sweep"] for rate, r in results.items()}, PNG)
    write_section(section(results, args.rounds, (load_before, os.getloadavg()[0])))
    print(f"wrote {PNG} and the {SECTION!r} section of {DOC}")


if __name__ == "__main__":
    main()
