"""Take the measurements the cost model is fitted to and checked against, and write them to one
JSON file: allreduce sweeps (float32 Sum, benchmarks/allreduce_sweep.py) and ResNet-50 gradient
rounds (benchmarks/resnet50_round.py), on this machine's shared memory or across the emulated
hosts of dev/cluster (which must be up, and shaped to the rate named by --rate). Each layout
whose ranks share a host runs with the shared-memory allreduce off (the ring over MPI) and, where
that path would run, on.

The configurations take turns, --passes times over, so that load from other work on the
machine falls on all of them alike; fit.py takes the median of the passes. Before each job it
waits (up to --max-wait seconds) for the 1-minute load average to fall below --quiet-load, and
it records the load average each job started at.

    python benchmarks/cost_model/measure.py shm --out benchmarks/cost_model/measurements/shm.json
    dev/cluster/hosts-up 2 && dev/cluster/shape 1gbit
    python benchmarks/cost_model/measure.py hosts --rate 1gbit \
        --out benchmarks/cost_model/measurements/hosts-1gbit.json
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from measurements import moment

BENCHMARKS = Path(__file__).resolve().parent.parent
ROOT = BENCHMARKS.parent
MIB = 1 << 20

# (hosts, ranks per host, hierarchical_allreduce, shm_allreduce): each host's ranks on the ring,
# and through shared memory where that path runs (one host; a hierarchical allreduce's stages
# inside each host); k=1 has nothing to do within a host
SHM_LAYOUTS = [(1, 2, 0, 0), (1, 3, 0, 0), (1, 4, 0, 0), (1, 2, 0, 1), (1, 3, 0, 1), (1, 4, 0, 1)]
HOST_LAYOUTS = [(2, 1, 0, 0), (2, 2, 0, 0), (2, 2, 1, 0), (2, 2, 1, 1)]


def command(kind, layout, json_path, args):
    hosts, per_host, hier, shm = layout
    script = {"sweep": "allreduce_sweep.py", "resnet": "resnet50_round.py"}[kind]
    bench = [sys.executable, str(BENCHMARKS / script), "--json", str(json_path),
             "--config", f"hierarchical_allreduce={hier}", "--config", f"shm_allreduce={shm}"]
    bench += ["--max-bytes", str(args.max_bytes)] if kind == "sweep" else ["--repeats", str(args.resnet_repeats)]
    if hosts == 1:
        return ["timeout", "-k", "10", str(args.timeout), "mpirun", "--oversubscribe", "--bind-to", "none",
                "-np", str(per_host), *bench]
    return [str(ROOT / "dev/cluster/mpirun-hosts"), "-k", str(per_host), "-n", str(hosts),
            "-t", str(args.timeout), *bench]


def load_average():
    return os.getloadavg()[0]


def wait_for_quiet(threshold, max_wait):
    deadline = time.monotonic() + max_wait
    while load_average() >= threshold and time.monotonic() < deadline:
        time.sleep(5)
    return load_average()


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("where", choices=["shm", "hosts"])
    parser.add_argument("--out", required=True)
    parser.add_argument("--rate", help="the link rate dev/cluster/shape was given (hosts only)")
    parser.add_argument("--passes", type=int, default=2)
    parser.add_argument("--max-bytes", type=int, default=64 * MIB)
    parser.add_argument("--resnet-repeats", type=int, default=9)
    parser.add_argument("--timeout", type=int, default=600, help="seconds per job")
    parser.add_argument("--quiet-load", type=float, default=2.0)
    parser.add_argument("--max-wait", type=float, default=120, help="seconds to wait for quiet, per job")
    args = parser.parse_args()
    if args.where == "hosts" and not args.rate:
        parser.error("hosts: say which rate the link was shaped to (--rate)")
    layouts = SHM_LAYOUTS if args.where == "shm" else HOST_LAYOUTS
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)}
    if args.where == "shm":
        env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
                   OMPI_MCA_btl_tcp_if_include="lo", OMPI_MCA_oob_tcp_if_include="lo")
    started = moment()
    runs, failed = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for pass_ in range(args.passes):
            for layout in layouts:
                for kind in ("sweep", "resnet"):
                    path = Path(tmp) / f"{kind}-{'-'.join(map(str, layout))}-{pass_}.json"
                    cmd = command(kind, layout, path, args)
                    load = wait_for_quiet(args.quiet_load, args.max_wait)
                    print(f"+ [load {load:.1f}]", " ".join(cmd), flush=True)
                    code = subprocess.run(cmd, env=env, cwd=ROOT).returncode
                    hosts, per_host, hier, shm = layout
                    job = {"kind": kind, "hosts": hosts, "per_host": per_host, "hierarchical": hier,
                           "shm": shm, "pass": pass_, "load_average": load}
                    if code != 0:  # recorded, and the other jobs go on
                        print(f"job failed with exit status {code}", flush=True)
                        failed.append({**job, "exit": code})
                        continue
                    runs.append({**job, "result": json.loads(path.read_text())})
    ended = moment()
    Path(args.out).write_text(json.dumps(
        {"where": args.where, "rate": args.rate, "cores": os.cpu_count(), "passes": args.passes,
         "started": started, "ended": ended, "runs": runs, "failed": failed}, indent=1))
    print(f"wrote {args.out}: {len(runs)} runs, {len(failed)} failed, load average "
          f"{started['load_average']:.1f} -> {ended['load_average']:.1f}")


if __name__ == "__main__":
    main()
