"""Elastic training's costs (docs/elastic.md): what commit() costs for a ResNet-50-sized state,
and, on two emulated hosts, how long training takes to resume after a host is lost and how many
steps are done twice.

    .venv/bin/python benchmarks/elastic_recovery.py [--runs 3] [--repeats 7] [--commit-only] [--json FILE]

commit: TensorFlowKerasState of tf.keras.applications.ResNet50 (weights=None) with a built
Adam: 25.6 M weights plus two slots each, 307 MB.  What State.save does (views of the
variables, then the host's copy in /dev/shm) is timed against a copy of the same arrays into
preallocated memory (np.copyto, the least any copy costs), alternating, medians.  The
allreduce a commit ends with is left out: at one process it is nothing.

recovery (root, dev/cluster/): the Keras job of tests/cluster/elastic_keras_job.py on h1 and
h2, one rank each, committing after every batch; every rank of h2 is SIGKILLed in the middle
of epoch 1.  Times are from the kill, medians over --runs jobs.
"""
import argparse
import json
import os
import pathlib
import pickle
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

from machine_lock import cluster_lock

REPO = pathlib.Path(__file__).resolve().parents[1]
CLUSTER = REPO / "dev" / "cluster"
JOB = REPO / "tests" / "cluster" / "elastic_keras_job.py"


def table(title, rows):
    widths = [max(len(str(row[i])) for row in rows) for i in range(2)]
    print(f"\n{title}\n")
    for i, (name, value) in enumerate(rows):
        print(f"| {name.ljust(widths[0])} | {str(value).rjust(widths[1])} |")
        if i == 0:
            print(f"|{'-' * (widths[0] + 2)}|{'-' * (widths[1] + 1)}:|")


def alternating_medians(methods, repeats):
    samples = {name: [] for name in methods}
    for _ in range(repeats):
        for name, fn in methods.items():
            start = time.perf_counter()
            fn()
            samples[name].append(time.perf_counter() - start)
    return {name: statistics.median(s) for name, s in samples.items()}


def commit_cost(repeats):
    import tensorflow as tf

    from mpirep.elastic.layout import Layout
    from mpirep.elastic.stores import HostStore
    from mpirep.tensorflow.elastic import TensorFlowKerasState

    state = TensorFlowKerasState(tf.keras.applications.ResNet50(weights=None),
                                 tf.keras.optimizers.Adam(), epoch=0, batch=0)
    named, _ = state.snapshot()
    nbytes = sum(a.nbytes for _, a in named)
    preallocated = [np.empty_like(a) for _, a in named]

    def copy():
        for target, (_, array) in zip(preallocated, state.snapshot()[0]):
            np.copyto(target, array)

    with tempfile.TemporaryDirectory(dir="/dev/shm") as directory:
        store = HostStore(directory)
        commits = iter(range(1, 10 ** 6))

        def commit(writer, writers):
            arrays, objects = state.snapshot()
            store.save(next(commits), Layout.of(arrays), [a for _, a in arrays],
                       pickle.dumps(objects), writer, writers)

        commit(0, 1), commit(0, 1)    # both slots' pages exist from now on, as in training
        times = alternating_medians({
            "copy": copy,
            "commit": lambda: commit(0, 1),
            "commit_half": lambda: commit(0, 2),
        }, repeats)
    ms = {name: f"{seconds * 1e3:.0f} ms" for name, seconds in times.items()}
    table(f"commit() of a ResNet-50 state: {len(named)} arrays, {nbytes / 1e6:.0f} MB "
          f"(median of {repeats})", [
              ("measure", "ratio"),
              (f"commit, 1 rank per host / np.copyto of the same arrays ({ms['commit']} / "
               f"{ms['copy']})", f"{times['commit'] / times['copy']:.2f}"),
              (f"commit, each of 2 ranks per host / np.copyto ({ms['commit_half']} / "
               f"{ms['copy']})", f"{times['commit_half'] / times['copy']:.2f}"),
          ])
    return {"arrays": len(named), "bytes": nbytes, "repeats": repeats, "seconds": times}


def harness_settings():
    """The emulated hosts' ssh config and subnet, as dev/cluster/lib.sh names them, and the
    hosts up now."""
    out = subprocess.run(["bash", "-c", f"source {CLUSTER}/lib.sh; echo $SSH_CONFIG $SUBNET "
                          "$(live_hosts)"], check=True, capture_output=True, text=True).stdout
    ssh_config, subnet, *up = out.split()
    return ssh_config, subnet, up


def one_recovery(ssh_config, subnet, steps):
    sys.path.insert(0, str(REPO / "tests" / "cluster"))
    from elastic_jobs import Job, kill_host_at

    kill = kill_host_at("h2", gen=0, epoch=1, batch=steps // 2)
    env = {"OMPI_MCA_btl_tcp_if_include": subnet, "OMPI_MCA_oob_tcp_if_include": subnet,
           "TF_CPP_MIN_LOG_LEVEL": "3"}
    command = [str(CLUSTER / "on-host"), "h1", sys.executable, "-m", "mpirep.launch",
               "--min-np", "1", "-H", "h1:1,h2:1", "--network-interface", subnet,
               "--ssh-config-file", ssh_config, sys.executable, str(JOB), "--epochs", "3",
               "--steps", str(steps), "--step-seconds", "0.1"]
    job = Job(command, env, on_event=kill, timeout=300)
    assert job.returncode == 0 and kill.killed_at, job.output
    killed = kill.killed_at[0]

    def first(predicate):
        return next(t for t, line in job.lines if predicate(line))

    resumed = [e for e in job.of("resume", gen=1, rank=0) if e["call"] == 0][0]
    first_step = job.of("step", gen=1, rank=0)[0]
    done = max(e["epoch"] * steps + e["batch"] for e in job.of("step", gen=0, rank=0))
    return {
        "noticed": first(lambda line: "generation 0 ended" in line) - killed,
        "relaunched": first(lambda line: "generation 1:" in line) - killed,
        "started": job.of("start", gen=1, rank=0)[0]["time"] - killed,
        "resumed": resumed["time"] - killed,
        "stepped": first_step["time"] - killed,
        # The step whose report the kill cut off was committed too: then none is redone.
        "redone": max(0, done - (resumed["epoch"] * steps + resumed["batch"])),
    }


def tensorflow_import_seconds():
    """How long a new Python process takes to import TensorFlow here, now: the baseline the
    restart times are read against."""
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import tensorflow"], check=True,
                   capture_output=True, env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
    return time.perf_counter() - start


def recovery(runs, steps):
    with cluster_lock():
        return recovery_on_hosts(runs, steps)


def recovery_on_hosts(runs, steps):
    ssh_config, subnet, were_up = harness_settings()
    if not {"h1", "h2"} <= set(were_up):
        up = subprocess.run([str(CLUSTER / "hosts-up"), "2"], capture_output=True, text=True)
        if up.returncode != 0:
            sys.exit(f"cannot start the emulated hosts (root needed):\n{up.stdout}{up.stderr}")
    try:
        results, imports = [], []
        for _ in range(runs):   # alternating, so that load changes hit both alike
            results.append(one_recovery(ssh_config, subnet, steps))
            imports.append(tensorflow_import_seconds())
    finally:
        if not were_up:   # leave hosts someone else started
            subprocess.run([str(CLUSTER / "hosts-down")], capture_output=True)
    median = {key: statistics.median(r[key] for r in results) for key in results[0]}
    baseline = statistics.median(imports)
    table(f"Losing one of 2 hosts (1 rank each), seconds after the SIGKILL (median of {runs})", [
        ("event", "s"),
        ("(baseline: a new Python process imports TensorFlow)", f"{baseline:.2f}"),
        ("the driver has noticed and stopped the generation", f"{median['noticed']:.2f}"),
        ("the next generation is launched", f"{median['relaunched']:.2f}"),
        ("its rank has started (Python, TensorFlow, mpirep.init)", f"{median['started']:.2f}"),
        ("it has restored the last commit (model built, state synced)",
         f"{median['resumed']:.2f}"),
        ("training has resumed: its first step is done", f"{median['stepped']:.2f}"),
        ("  the same, over the baseline", f"{median['stepped'] / baseline:.2f}"),
        ("steps done twice (a commit after every step)",
         " ".join(str(r["redone"]) for r in results)),
    ])
    return {"runs": runs, "tensorflow_import_s": baseline, "median_s": median,
            "redone": [r["redone"] for r in results]}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3, help="elastic jobs to time")
    parser.add_argument("--repeats", type=int, default=7, help="timings of each commit method")
    parser.add_argument("--steps", type=int, default=10, help="batches per epoch of the job")
    parser.add_argument("--commit-only", action="store_true", help="skip the recovery jobs")
    parser.add_argument("--json", help="write the results to this file")
    args = parser.parse_args()
    results = {"commit": commit_cost(args.repeats)}
    if not args.commit_only:
        results["recovery"] = recovery(args.runs, args.steps)
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
