"""The cross-host suite: two emulated hosts (dev/cluster) joined by a link shaped to each rate in
turn, and on it

  * the allreduce sweep of across_hosts_sweep.py at 2 hosts x 2 ranks: mpirep's flat ring, its
    hierarchical allreduce and MPI_Allreduce, timed in turns within one job, with the bytes
    each host sent across the link;
  * scaling efficiency of 2 hosts against 1 for Keras training (tf_keras_cnn.py): images/sec
    at 2 hosts x K ranks over twice those at 1 host x K, for K = 1 and 2;
  * how much gradient traffic a training step hides behind backprop (overlap.py), for each of
    its models, at 2 hosts x 1 rank;
  * ZeroRedundancyOptimizer's step time against DistributedOptimizer's (zero_optimizer.py) at
    2 hosts x 1 rank;
  * a training step of each of overlap.py's models through mpirep and through TensorFlow's
    MultiWorkerMirroredStrategy, against the step's bound (step_vs_mwms.py), at 2 hosts x 1 rank.

It holds the machine's cluster lock, brings the hosts up, writes everything to one JSON file
and takes the hosts down again; benchmarks/run_all.py turns that file into docs/benchmarks.md's
"Across hosts" sections. As root, from the repository root:

    python benchmarks/across_hosts.py --json hosts.json [--rates 1gbit,10gbit] [--rounds 3] [--quick]

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

from machine_lock import cluster_lock

HERE = Path(__file__).resolve().parent
CLUSTER = HERE.parent / "dev" / "cluster"
CNN_ARGS = ["--steps", "15", "--epochs", "3"]  # the first epoch (tracing) is not timed
QUICK_CNN_ARGS = ["--steps", "3", "--epochs", "2"]
OVERLAP_MODELS = ["cnn", "resnet50"]
PEER_STEPS = {"cnn": 5, "resnet50": 3}  # per timed block of step_vs_mwms.py: about a second
TIMEOUT_S = 900


def cluster(script, *args):
    subprocess.run([str(CLUSTER / script), *args], check=True)


def on_hosts(hosts, per_host, script, out, *args):
    """Runs a benchmark script with `per_host` ranks on each of `hosts` hosts; its JSON."""
    cluster("mpirun-hosts", "-n", str(hosts), "-k", str(per_host), "-t", str(TIMEOUT_S),
            sys.executable, str(HERE / script), "--json", str(out), *args)
    return json.loads(out.read_text())


def measure(rates, args, tmp):
    """{rate: {"link_gbit": ..., "sweep": ..., "cnn": [[hosts, per_host, images/sec]...],
    "overlap": {model: ...}}}. A job on one host does not touch the link, so the 1-host CNN runs
    once, unshaped, and serves every rate."""
    cnn_args = QUICK_CNN_ARGS if args.quick else CNN_ARGS
    one_host = [[1, k, on_hosts(1, k, "tf_keras_cnn.py", tmp / f"cnn-1x{k}.json", *cnn_args)["images_per_sec"]]
                for k in (1, 2)]
    overlap_args = ["--rounds", "1", "--steps", "1"] if args.quick else ["--rounds", str(args.overlap_rounds)]
    zero_args = ["--state-model", "none", "--time-model", "mlp",
                 *(["--blocks", "1", "--steps", "2"] if args.quick else ["--blocks", str(args.zero_blocks)])]
    results = {}
    for rate in rates:
        shaped = subprocess.run([str(CLUSTER / "shape"), rate], check=True, capture_output=True, text=True)
        print(shaped.stdout, end="", flush=True)
        sweep_args = ["--rounds", "1", "--max-bytes", str(1 << 20)] if args.quick else ["--rounds", str(args.rounds)]
        sweep = on_hosts(2, 2, "across_hosts_sweep.py", tmp / f"sweep-{rate}.json", *sweep_args)
        cnn = list(one_host)
        for k in (1, 2):
            cnn.append([2, k, on_hosts(2, k, "tf_keras_cnn.py", tmp / f"cnn-2x{k}-{rate}.json",
                                       *cnn_args)["images_per_sec"]])
        overlap = {model: on_hosts(2, 1, "overlap.py", tmp / f"overlap-{model}-{rate}.json",
                                   "--model", model, *overlap_args) for model in OVERLAP_MODELS}
        zero = on_hosts(2, 1, "zero_optimizer.py", tmp / f"zero-{rate}.json", *zero_args)
        peers = {model: on_hosts(2, 1, "step_vs_mwms.py", tmp / f"peers-{model}-{rate}.json", "--model", model,
                                 *(["--rounds", "1", "--steps", "1"] if args.quick
                                   else ["--rounds", str(args.peer_rounds), "--steps", str(PEER_STEPS[model])]))
                 for model in OVERLAP_MODELS}
        results[rate] = {"shape_output": shaped.stdout.strip(), "sweep": sweep, "cnn": cnn,
                         "overlap": overlap, "zero": zero, "peers": peers}
    cluster("shape", "off")
    return results


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", required=True, help="where the results go")
    parser.add_argument("--rates", default="1gbit,10gbit", help="tc rates, comma-separated")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of the allreduce sweep")
    parser.add_argument("--overlap-rounds", type=int, default=7, help="rounds of overlap.py")
    parser.add_argument("--peer-rounds", type=int, default=5, help="rounds of step_vs_mwms.py")
    parser.add_argument("--zero-blocks", type=int, default=7, help="timed blocks of zero_optimizer.py")
    parser.add_argument("--quick", action="store_true", help="a smoke run: tiny settings")
    parser.add_argument("--keep-hosts", action="store_true", help="leave the hosts up")
    args = parser.parse_args()
    rates = args.rates.split(",")
    load_before = os.getloadavg()[0]
    with cluster_lock():
        cluster("hosts-up", "2")
        try:
            with tempfile.TemporaryDirectory() as tmp:
                results = measure(rates, args, Path(tmp))
        finally:
            if not args.keep_hosts:
                cluster("hosts-down")
    Path(args.json).write_text(json.dumps(
        {"rates": results, "rounds": args.rounds, "overlap_rounds": args.overlap_rounds,
         "load_average": [load_before, os.getloadavg()[0]]}, indent=1))
    print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
