"""Run every benchmark and write docs/benchmarks.md whole, with its PNGs, and the results it was
made from (docs/benchmarks-results.json): the allreduce sweep, the ResNet-50 gradient round
(and its fusion thresholds), many small tensors and an idle mpirep, rank 0's negotiation cost
from 2 to 32 ranks, autotuning, the TensorFlow layer, elastic training's costs, and, as root,
the cross-host suite on the emulated hosts of dev/cluster; then the cost model, fitted to the
measurement files of benchmarks/cost_model/measurements/ (measured again first with
--cost-model-measure, as root).

    python benchmarks/run_all.py                  # from the repository root, at a quiet moment
    python benchmarks/run_all.py --smoke --out /tmp/bench   # tiny settings: does it all run and render?
    python benchmarks/run_all.py --render         # the page again from the saved results
    python benchmarks/run_all.py --keep /tmp/b    # each result kept; run again to finish a stopped run

The page's fixed text lives in benchmarks/benchmarks_doc.md.tmpl, its tables in render_doc.py.
"""
import argparse
import datetime
import importlib.util
import json
import os
import platform
import subprocess
import sys
import tempfile
from pathlib import Path

from machine_lock import cluster_lock
from render_doc import render

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
DOCS = ROOT / "docs"
COST_MODEL = HERE / "cost_model"
CLUSTER = ROOT / "dev" / "cluster"
FUSION_THRESHOLDS = [256 << 10, 1 << 20, 4 << 20, 16 << 20, 64 << 20]
LAUNCH_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
              "OMPI_MCA_btl_tcp_if_include": "lo", "OMPI_MCA_oob_tcp_if_include": "lo",
              "TF_CPP_MIN_LOG_LEVEL": "2"}


class Settings:
    """The size of every benchmark: the full run, or --smoke's tiny one."""

    def __init__(self, smoke, nps):
        self.smoke = smoke
        self.nps = [2] if smoke else nps
        self.cost_nps = [2, 4] if smoke else [2, 4, 8, 16, 32]
        self.fusion_thresholds = FUSION_THRESHOLDS[:2] if smoke else FUSION_THRESHOLDS
        self.args = {  # extra arguments per benchmark
            "allreduce_sweep": ["--max-bytes", str(64 << 10)] if smoke else [],
            "resnet50_round": ["--repeats", "1"] if smoke else [],
            "small_tensors": ["--repeats", "1"] if smoke else [],
            "coordinator_cost": ["--steps", "2"] if smoke else [],
            "autotune": ["--repeats", "1", "--rounds", "2", "--warm-rounds", "5", "--steps-per-sample", "1",
                         "--warmup-samples", "0", "--samples-per-trial", "1"] if smoke
                        else ["--repeats", "5", "--rounds", "9"],
            "tf_allreduce_bridges": ["--quick"] if smoke else [],
            "tf_resnet50_round": ["--repeats", "1"] if smoke else [],
            "tf_training_overhead": ["--rounds", "1", "--steps", "2", "--cycle-times", "0"] if smoke
                                    else ["--rounds", "5", "--cycle-times", "0"],
            "tf_xla_collectives": ["--steps", "5"] if smoke else [],
            "elastic_recovery": ["--repeats", "1", "--runs", "1", "--steps", "4"] if smoke else [],
            "across_hosts": ["--quick", "--rates", "1gbit"] if smoke else [],
            "zero_optimizer": ["--state-model", "small_resnet", "--blocks", "1", "--steps", "2"] if smoke
                              else ["--time-model", "mlp", "--blocks", "11"],
        }


class Runner:
    """Runs benchmark scripts, each under a hard limit, and keeps when it started and the load
    averages seen. With reuse, a result already in its directory is taken, not measured again,
    and so are the start and loads of the run that measured it (kept in run.json there)."""

    def __init__(self, directory, reuse=False):
        self.dir = Path(directory)
        self.reuse = reuse
        kept = self.dir / "run.json"
        if reuse and kept.exists():
            earlier = json.loads(kept.read_text())
            self.started, self.loads = earlier["started"], earlier["loads"]
        else:
            self.started, self.loads = utc_now(), []
        self.note_load()
        self.env = {**os.environ, **LAUNCH_ENV,  # this checkout's mpirep, even where not installed
                    "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)}

    def note_load(self):
        self.loads.append(os.getloadavg()[0])
        if self.reuse:
            (self.dir / "run.json").write_text(json.dumps({"started": self.started, "loads": self.loads}))

    def _run(self, command, timeout_s):
        self.note_load()
        print("+", " ".join(command), flush=True)
        subprocess.run(["timeout", "-k", "10", str(timeout_s), *command], check=True, env=self.env, cwd=ROOT)

    def mpi(self, script, ranks, args=(), timeout_s=1200, tag=""):
        """`mpirun -np ranks python benchmarks/<script>.py --json F args...`; the JSON it wrote."""
        out = self.dir / f"{script}-np{ranks}{tag}.json"
        if self.reuse and out.exists():
            return json.loads(out.read_text())
        self._run(["mpirun", "--oversubscribe", "--bind-to", "none", "-np", str(ranks), sys.executable,
                   str(HERE / f"{script}.py"), "--json", str(out), *args], timeout_s)
        return json.loads(out.read_text())

    def python(self, script, args=(), timeout_s=3600):
        """`python benchmarks/<script>.py --json F args...` (the script starts its own jobs)."""
        out = self.dir / f"{script}.json"
        if self.reuse and out.exists():
            return json.loads(out.read_text())
        self._run([sys.executable, str(HERE / f"{script}.py"), "--json", str(out), *args], timeout_s)
        return json.loads(out.read_text())


def has_tensorflow():
    return subprocess.run([sys.executable, "-c", "import tensorflow"], capture_output=True).returncode == 0


def can_start_hosts():
    return os.geteuid() == 0 and (CLUSTER / "hosts-up").exists()


def measure(settings, runner, hosts, cost_model_measure):
    """Every benchmark's results, and why any part was skipped."""
    results, skipped = {}, {}
    a = settings.args
    for name, timeout_s in (("allreduce_sweep", 1200), ("resnet50_round", 600), ("small_tensors", 600)):
        results[name] = {str(n): runner.mpi(name, n, a[name], timeout_s) for n in settings.nps}
    results["fusion"] = {str(t): runner.mpi("resnet50_round", 2, [*a["resnet50_round"], "--config",
                                                                  f"fusion_threshold={t}"], 600, f"-fusion{t}")
                         for t in settings.fusion_thresholds}
    results["coordinator_cost"] = [runner.mpi("coordinator_cost", n, a["coordinator_cost"], 900)
                                   for n in settings.cost_nps]
    results["autotune"] = runner.mpi("autotune", 2, a["autotune"], 1800)
    if has_tensorflow():
        results["tf_bridges"] = runner.mpi("tf_allreduce_bridges", 2, a["tf_allreduce_bridges"], 900)
        results["tf_resnet50_round"] = runner.mpi("tf_resnet50_round", 2, a["tf_resnet50_round"], 900)
        results["tf_training"] = {str(n): runner.mpi("tf_training_overhead", n, a["tf_training_overhead"], 1800)
                                  for n in (1, 2)}
        results["tf_xla"] = runner.mpi("tf_xla_collectives", 2, a["tf_xla_collectives"], 900)
        # Step times at 2 ranks; the state alone at 4.
        results["zero"] = {str(n): runner.mpi("zero_optimizer", n, a["zero_optimizer"] + ([] if n == 2 else ["--blocks", "0"]),
                                              1800) for n in (2, 4)}
        elastic_args = a["elastic_recovery"] + ([] if hosts else ["--commit-only"])
        results["elastic"] = runner.python("elastic_recovery", elastic_args)
    else:
        for name in ("tf_bridges", "tf_resnet50_round", "tf_training", "tf_xla", "zero", "elastic"):
            skipped[name] = "TensorFlow is not installed"
    if hosts:
        results["hosts"] = runner.python("across_hosts", a["across_hosts"], 7200)
        if cost_model_measure:
            measure_cost_model(runner)
    else:
        why = "it needs root, to start the emulated hosts of dev/cluster" if not can_start_hosts() \
            else "run without --hosts"
        for name in ("hosts", "elastic_recovery"):
            skipped[name] = why
    results["skipped"] = skipped
    return results


def measure_cost_model(runner):
    """The cost model's measurement files, taken again: shared memory, the memory copy, and the
    emulated hosts at 1 Gbit/s."""
    files = COST_MODEL / "measurements"
    runner._run([sys.executable, str(COST_MODEL / "memcpy.py"), "--out", str(files / "copy.json")], 600)
    runner._run([sys.executable, str(COST_MODEL / "measure.py"), "shm", "--out", str(files / "shm.json")], 7200)
    with cluster_lock():
        subprocess.run([str(CLUSTER / "hosts-up"), "2"], check=True)
        try:
            subprocess.run([str(CLUSTER / "shape"), "1gbit"], check=True)
            runner._run([sys.executable, str(COST_MODEL / "measure.py"), "hosts", "--rate", "1gbit",
                         "--out", str(files / "hosts-1gbit.json")], 7200)
        finally:
            subprocess.run([str(CLUSTER / "hosts-down")], check=False)


def cost_model_section(out_dir):
    """The cost model's section, fitted to the measurement files, with where they come from."""
    section = subprocess.run([sys.executable, str(COST_MODEL / "report.py"), "--png-dir", str(out_dir)],
                             check=True, capture_output=True, text=True, cwd=ROOT).stdout.strip()
    origins = []
    for name in ("shm.json", "hosts-1gbit.json", "copy.json"):
        meta = json.loads((COST_MODEL / "measurements" / name).read_text())
        when = meta.get("started", meta)  # measure.py's files say when they started; memcpy.py's say when
        origins.append(f"`{name}` ({when['utc']}, load average {when['load_average']:.1f})")
    heading, _, body = section.partition("\n")
    note = ("The model is fitted to the measurement files of `benchmarks/cost_model/measurements/`, "
            "taken by `measure.py` and `memcpy.py` (`run_all.py --cost-model-measure` takes them "
            "again): " + ", ".join(origins) + ".")
    return f"{heading}\n\n{note}\n{body}"


def meta(settings, started, loads, ended):
    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), platform.processor() or platform.machine())
    memory_kib = next(int(line.split()[1]) for line in Path("/proc/meminfo").read_text().splitlines()
                      if line.startswith("MemTotal"))

    def out(*command):
        done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT)
        return done.stdout.strip() if done.returncode == 0 else ""

    commit = out("git", "rev-parse", "--short", "HEAD") or "unknown"
    if out("git", "status", "--porcelain", "--untracked-files=no"):
        commit += ", with uncommitted changes"
    mpi = (out("mpirun", "--version").splitlines() or ["unknown MPI"])[0]
    tf = out(sys.executable, "-c", "import tensorflow as tf; print(tf.__version__)")
    software = f"{mpi}; Python {platform.python_version()}" + (f"; TensorFlow {tf}" if tf else "")
    return {"smoke": settings.smoke, "started": started, "ended": ended, "cpu": cpu, "cores": os.cpu_count(),
            "memory_gib": memory_kib / 2**20, "commit": commit, "software": software,
            "load_average": {"start": loads[0], "end": loads[-1], "max": max(loads)}}


def utc_now():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--np", type=int, nargs="+", default=[2, 4], help="rank counts of the local benchmarks")
    parser.add_argument("--smoke", action="store_true", help="every benchmark at tiny settings")
    parser.add_argument("--out", default=str(DOCS), help="where benchmarks.md and its PNGs go (default docs/)")
    parser.add_argument("--results", help="the results file (default: OUT/benchmarks-results.json)")
    parser.add_argument("--render", action="store_true", help="measure nothing: render the results file")
    parser.add_argument("--hosts", choices=["auto", "yes", "no"], default="auto",
                        help="the cross-host suite and elastic recovery (auto: when root)")
    parser.add_argument("--keep", metavar="DIR",
                        help="keep each benchmark's results in DIR, and take those already there "
                             "instead of measuring them again (to finish a run that stopped)")
    parser.add_argument("--cost-model-measure", action="store_true",
                        help="take the cost model's measurements again first (needs --hosts)")
    args = parser.parse_args()
    if importlib.util.find_spec("matplotlib") is None:   # found now, not after an hour of measuring
        parser.error("the page's plots need matplotlib: pip install -e '.[bench]'")
    out_dir = Path(args.out)
    results_file = Path(args.results) if args.results else out_dir / "benchmarks-results.json"
    if args.render:
        results = json.loads(results_file.read_text())
    else:
        hosts = args.hosts == "yes" or (args.hosts == "auto" and can_start_hosts())
        if args.cost_model_measure and not hosts:
            parser.error("--cost-model-measure needs the emulated hosts (root, --hosts)")
        settings = Settings(args.smoke, args.np)
        with tempfile.TemporaryDirectory() as tmp:
            if args.keep:
                Path(args.keep).mkdir(parents=True, exist_ok=True)
            runner = Runner(args.keep or tmp, reuse=bool(args.keep))
            results = measure(settings, runner, hosts, args.cost_model_measure)
            runner.note_load()
        results["meta"] = meta(settings, runner.started, runner.loads, utc_now())
        out_dir.mkdir(parents=True, exist_ok=True)
        results_file.write_text(json.dumps(results, indent=1))
    results["cost_model_section"] = cost_model_section(out_dir)
    print(f"wrote {render(results, out_dir)} and {results_file}")


if __name__ == "__main__":
    main()
