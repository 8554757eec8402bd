"""Run every benchmark at np=2 and np=4 (oversubscribed where ranks outnumber cores), and rank 0's
negotiation cost from 2 to 32 ranks, and write docs/benchmarks.md with its tables,
docs/benchmarks-allreduce.png and docs/benchmarks-coordinator.png.

    python benchmarks/run_all.py            # from the repository root, with mpirep installed
"""
import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
from pathlib import Path

from plot import plot_coordinator_cost, plot_sweep
from units import human_bytes

HERE = Path(__file__).resolve().parent
DOCS = HERE.parent / "docs"
BENCHMARKS = {"allreduce_sweep": 1200, "resnet50_round": 600, "small_tensors": 600}  # timeout s
COST_NPS = [2, 4, 8, 16, 32]  # rank counts of coordinator_cost.py
LAUNCH_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
              "OMPI_MCA_btl_tcp_if_include": "lo", "OMPI_MCA_oob_tcp_if_include": "lo"}


FUSION_THRESHOLDS = [256 << 10, 1 << 20, 4 << 20, 16 << 20, 64 << 20]  # the ResNet-50 fusion sweep


def run(name, np_, out_dir, extra, tag=""):
    out = out_dir / f"{name}-np{np_}{tag}.json"
    command = ["timeout", "-k", "10", str(BENCHMARKS.get(name, 600)), "mpirun", "--oversubscribe",
               "--bind-to", "none", "-np", str(np_), sys.executable, str(HERE / f"{name}.py"),
               "--json", str(out), *extra]
    print("+", " ".join(command), flush=True)
    # this checkout's mpirep, even where it is not installed
    path = os.pathsep.join(p for p in (str(HERE.parent), os.environ.get("PYTHONPATH")) if p)
    subprocess.run(command, check=True, env={**os.environ, **LAUNCH_ENV, "PYTHONPATH": path})
    return json.loads(out.read_text())


def sweep_table(run_):
    lines = ["| size | mpirep ms | MPI_Allreduce ms | mpirep busbw GB/s | MPI busbw GB/s | ratio |",
             "|---:|---:|---:|---:|---:|---:|"]
    for r in run_["rows"]:
        lines.append(f"| {human_bytes(r['bytes'])} | {r['mpirep_s'] * 1e3:.3f} | {r['mpi_s'] * 1e3:.3f} "
                     f"| {r['mpirep_busbw']:.2f} | {r['mpi_busbw']:.2f} | {r['ratio']:.2f} |")
    return lines


def resnet_table(runs):
    lines = ["| np | mpirep round ms | one MPI_Allreduce ms | 214 MPI_Allreduce ms | "
             "mpirep / faster MPI |", "|---:|---:|---:|---:|---:|"]
    for r in runs:
        s = r["seconds"]
        lines.append(f"| {r['np']} | {s['mpirep'] * 1e3:.1f} | {s['mpi_fused'] * 1e3:.1f} | "
                     f"{s['mpi_per_tensor'] * 1e3:.1f} | {r['ratio_to_best_mpi']:.2f} |")
    return lines


def small_table(runs):
    lines = ["| np | case | mpirep us/tensor | MPI_Allreduce us/tensor | ratio |",
             "|---:|---|---:|---:|---:|"]
    for r in runs:
        us = r["us_per_tensor"]
        for case, key in (("1,000 in flight", "batch"), ("one at a time", "single"),
                          ("one at a time, unnamed", "unnamed")):
            lines.append(f"| {r['np']} | {case} | {us[key + '_mpirep']:.1f} | {us[key + '_mpi']:.1f} | "
                         f"{us[key + '_mpirep'] / us[key + '_mpi']:.2f} |")
    return lines


def idle_table(runs):
    lines = ["| np | MPI_Allreduce 4 KiB before mpirep.init, us | after, mpirep idle, us | ratio |",
             "|---:|---:|---:|---:|"]
    for r in runs:
        us = r["us_per_tensor"]
        lines.append(f"| {r['np']} | {us['mpi_before_init']:.1f} | {us['mpi_idle_mpirep']:.1f} | "
                     f"{us['mpi_idle_mpirep'] / us['mpi_before_init']:.2f} |")
    return lines


def targets_table(results, np_):
    """The targets of issues 2 and 12, at np_ ranks."""
    sweep = {r["bytes"]: r for r in results["allreduce_sweep", np_]["rows"]}
    resnet = results["resnet50_round", np_]["ratio_to_best_mpi"]
    us = results["small_tensors", np_]["us_per_tensor"]
    rows = [("64 MiB allreduce, mpirep / MPI_Allreduce", "<= 0.8",
             f"{sweep[64 << 20]['ratio']:.2f}" if 64 << 20 in sweep else "not measured"),
            ("ResNet-50 round, mpirep / faster MPI baseline", "<= 0.9", f"{resnet:.2f}"),
            ("4 KiB tensor among 1,000 in flight, us", "<= 5", f"{us['batch_mpirep']:.1f}"),
            ("one blocking 4 KiB allreduce, mpirep / MPI_Allreduce", "<= 3",
             f"{us['single_mpirep'] / us['single_mpi']:.2f}")]
    return ["| measure | target | measured |", "|---|---:|---:|",
            *[f"| {m} | {t} | {v} |" for m, t, v in rows]]


def fusion_table(runs):
    lines = ["| fusion threshold | mpirep round ms | one MPI_Allreduce ms | 214 MPI_Allreduce ms | "
             "mpirep / faster MPI |", "|---:|---:|---:|---:|---:|"]
    for threshold, r in runs.items():
        s = r["seconds"]
        lines.append(f"| {human_bytes(threshold)} | {s['mpirep'] * 1e3:.1f} | {s['mpi_fused'] * 1e3:.1f} | "
                     f"{s['mpi_per_tensor'] * 1e3:.1f} | {r['ratio_to_best_mpi']:.2f} |")
    return lines


def cost_table(runs):
    lines = ["| np | path | rounds | slow rounds | messages in | bytes in | requests | CPU us |",
             "|---:|---|---:|---:|---:|---:|---:|---:|"]
    for r in runs:
        for path, c in r["per_step"].items():
            lines.append(f"| {r['np']} | {path} | {c['rounds']:.1f} | {c['slow_rounds']:.1f} | "
                         f"{c['messages_received']:.1f} | {c['bytes_received']:.0f} | "
                         f"{c['requests_received']:.1f} | {c['work_ns'] / 1e3:.1f} |")
    return lines


def mpi_version():
    out = subprocess.run(["mpirun", "--version"], capture_output=True, text=True).stdout
    return out.splitlines()[0] if out else "unknown MPI"


def write_doc(results, fusion, costs, nps, load):
    sweeps = {f"np={n}": results["allreduce_sweep", n] for n in nps}
    plot_sweep(sweeps, DOCS / "benchmarks-allreduce.png")
    plot_coordinator_cost(costs, DOCS / "benchmarks-coordinator.png")
    doc = ["# Benchmarks", "",
           f"Measured by `python benchmarks/run_all.py` on {os.cpu_count()} cores "
           f"({platform.machine()}, {mpi_version()}), mpirep at its default configuration, "
           "ranks started with `mpirun --oversubscribe --bind-to none`. Every time is the median "
           "over repeats of the slowest rank's time between barriers; every ratio compares with "
           "a baseline measured in the same run (ratio < 1: mpirep is faster). Bus bandwidth is "
           "bytes/time * 2(n-1)/n. Where ranks outnumber cores (np=4 on a 2-core machine) the "
           "figures measure oversubscribed scheduling as much as communication. The 1-minute load "
           f"average was {load[0]:.1f} when the run began and {load[1]:.1f} when it ended (it "
           "counts the benchmarks' own ranks, up to 32 of them at the end); any other work on the "
           "machine shows up in every figure, baselines included. The same targets across several "
           "quiet runs, and how the machine's two states move them: \"Issue 12 across quiet runs\" "
           "below.", ""]
    if 2 in nps:
        doc += ["## Against the targets (np=2)", "", *targets_table(results, 2), ""]
    doc += ["## Allreduce sweep (float32, Sum)", "",
            "mpirep.allreduce against mpi4py `comm.Allreduce` on the same buffer. mpirep returns a "
            "new array each call, MPI writes into a preallocated one.", "",
            "![bus bandwidth against size](benchmarks-allreduce.png)", ""]
    for n in nps:
        doc += [f"### np={n}", "", *sweep_table(results["allreduce_sweep", n]), ""]
    doc += ["## ResNet-50 gradient round", "",
            "The 214 float32 gradients of `tf.keras.applications.ResNet50` (25,583,592 parameters, "
            "97.6 MiB) issued as async allreduces (Sum) in backprop order, against one "
            "`MPI_Allreduce` of all the bytes (already packed: a lower bound for that approach) and "
            "against 214 separate `MPI_Allreduce` calls.", "",
            *resnet_table([results["resnet50_round", n] for n in nps]), "",
            "The same round at np=2 with other fusion thresholds (`--config fusion_threshold=N`), "
            "each run with its own baselines:", "",
            *fusion_table(fusion), "",
            "## Many small tensors", "",
            "1,000 async allreduces of 4 KiB submitted together (amortised cost per tensor) against "
            "1,000 `MPI_Allreduce` calls; and one blocking 4 KiB allreduce at a time.", "",
            *small_table([results["small_tensors", n] for n in nps]), "",
            "## What an idle mpirep costs its neighbours", "",
            "The same 4 KiB `MPI_Allreduce` timed before `mpirep.init()` and after it, while "
            "mpirep's background thread has nothing to do: a ratio near 1 means that thread "
            "does not steal the core it shares with the program.", "",
            *idle_table([results["small_tensors", n] for n in nps]), "",
            *COST_INTRO, "", *cost_table(costs), ""]
    (DOCS / "benchmarks.md").write_text("\n".join(doc) + _kept_sections())


COST_INTRO = [
    "## Rank 0's negotiation cost as the job grows", "",
    "`benchmarks/coordinator_cost.py`: every rank allreduces the same 16 tensors of 16 bytes "
    "each step; rank 0's counters per step, with the response cache off (`cache_capacity=0`, "
    "the full path: every tensor through rank 0) and at the default capacity (the fast path). "
    "CPU us is the background thread's CPU time spent negotiating (thread CPU clock, so "
    "oversubscription on 2 cores does not inflate it; it excludes the collectives themselves). "
    "Rounds per step vary with scheduling.", "",
    "![rank 0 CPU time per step against ranks](benchmarks-coordinator.png)"]


# Sections measured by other benchmarks and written by hand; regenerating keeps them.
# Everything from this line of docs/benchmarks.md on is written by hand (or by other scripts) and kept.
KEPT_FROM = "<!-- Sections below are not written by run_all.py; it keeps them. -->"


def _kept_sections():
    path = DOCS / "benchmarks.md"
    old = path.read_text() if path.exists() else ""
    return "\n" + old[old.index(KEPT_FROM):] if KEPT_FROM in old else ""


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--np", type=int, nargs="+", default=[2, 4])
    parser.add_argument("--quick", action="store_true", help="smaller sweep and fewer repeats")
    args = parser.parse_args()
    extra = {"allreduce_sweep": ["--max-bytes", str(4 << 20)] if args.quick else [],
             "resnet50_round": ["--repeats", "3"] if args.quick else [],
             "small_tensors": ["--repeats", "3"] if args.quick else []}
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        results = {(name, n): run(name, n, Path(tmp), extra[name]) for n in args.np for name in BENCHMARKS}
        fusion = {t: run("resnet50_round", 2, Path(tmp), [*extra["resnet50_round"], "--config",
                                                           f"fusion_threshold={t}"], f"-fusion{t}")
                  for t in FUSION_THRESHOLDS}
        costs = [run("coordinator_cost", n, Path(tmp), ["--steps", "10"] if args.quick else [])
                 for n in COST_NPS]
    write_doc(results, fusion, costs, args.np, (load_before, os.getloadavg()[0]))
    print(f"wrote {DOCS / 'benchmarks.md'}")


if __name__ == "__main__":
    main()
