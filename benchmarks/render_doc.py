"""docs/benchmarks.md from run_all.py's results: the fixed text of benchmarks_doc.md.tmpl with
each benchmark's tables and figures filled in, and the PNGs beside the page."""
import re
import statistics
from pathlib import Path
from string import Template

from units import human_bytes

HERE = Path(__file__).resolve().parent
TEMPLATE = HERE / "benchmarks_doc.md.tmpl"


def render(results, out_dir):
    """Writes out_dir/benchmarks.md and its PNGs; returns the page's path."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    parts = {
        "header": header(results),
        "summary": summary(results),
        "sweep": sweep(results, out_dir),
        "resnet": resnet(results),
        "fusion": fusion(results),
        "small": small(results),
        "idle": idle(results),
        "coordinator": coordinator(results, out_dir),
        "autotune": autotune(results),
        "tf_bridges": tf_bridges(results),
        "tf_resnet": tf_resnet(results),
        "tf_training": tf_training(results),
        "tf_xla": tf_xla(results),
        "zero": zero(results),
        "elastic_commit": elastic_commit(results),
        "elastic_recovery": elastic_recovery(results),
        "hosts_sweep": hosts_sweep(results, out_dir),
        "hosts_scaling": hosts_scaling(results),
        "hosts_overlap": hosts_overlap(results),
        "hosts_zero": hosts_zero(results),
        "hosts_peers": hosts_peers(results, out_dir),
        "cost_model": results.get("cost_model_section") or "## Cost model\n\n" + missing(results, "cost_model"),
    }
    text = re.sub(r"\A<!--.*?-->\n", "", TEMPLATE.read_text(), flags=re.S)
    page = out_dir / "benchmarks.md"
    page.write_text(Template(text).substitute(parts).rstrip() + "\n")
    return page


def missing(results, name):
    return f"_Not measured in this run: {results['skipped'].get(name, 'not run')}._"


def plural(count, noun):
    return f"{count} {noun}{'' if count == 1 else 's'}"


def table(header, rows, align=None):
    align = align or ["---"] + ["---:"] * (len(header) - 1)
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(align) + "|"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def header(results):
    m = results["meta"]
    load = m["load_average"]
    lines = [f"Written by `python benchmarks/run_all.py{' --smoke' if m['smoke'] else ''}`; the text comes "
             "from `benchmarks/benchmarks_doc.md.tmpl`.", "",
             f"- date: {m['started']} to {m['ended']} (UTC)",
             f"- machine: {m['cpu']}, {m['cores']} cores, {m['memory_gib']:.0f} GiB",
             f"- 1-minute load average: {load['start']:.1f} at the start, {load['end']:.1f} at the end, "
             f"{load['max']:.1f} at most as a benchmark started (counting the benchmarks' own ranks)",
             f"- commit: {m['commit']}",
             f"- software: {m['software']}"]
    if m["smoke"]:
        lines += ["", "**A smoke run**: every benchmark at tiny settings, to check that the suite "
                      "runs and this page renders. Its figures mean nothing."]
    return "\n".join(lines)


def _per_np(results, name):
    return {int(n): r for n, r in (results.get(name) or {}).items()}


def summary(results):
    sweeps, resnets, smalls = (_per_np(results, n).get(2) for n in ("allreduce_sweep", "resnet50_round", "small_tensors"))
    rows = []
    if sweeps:
        by_size = {r["bytes"]: r for r in sweeps["rows"]}
        for size in (1 << 20, 64 << 20):
            if size in by_size:
                rows.append([f"allreduce of {human_bytes(size)}, mpirep / `MPI_Allreduce`", f"{by_size[size]['ratio']:.2f}"])
                rows.append([f"allreduce of {human_bytes(size)}, mpirep / the copy bound", f"{by_size[size]['to_bound']:.2f}"])
    if resnets:
        rows.append(["ResNet-50 gradient round, mpirep / the faster MPI baseline", f"{resnets['ratio_to_best_mpi']:.2f}"])
        rows.append(["ResNet-50 gradient round, mpirep / the copy bound", f"{resnets['ratio_to_bound']:.2f}"])
    if smalls:
        us = smalls["us_per_tensor"]
        rows += [[f"a 4 KiB tensor among 1,000 in flight, mpirep / an `MPI_Allreduce` loop", f"{us['batch_mpirep'] / us['batch_mpi']:.2f}"],
                 ["one blocking 4 KiB allreduce of a repeated name, mpirep / `MPI_Allreduce`", f"{us['single_mpirep'] / us['single_mpi']:.2f}"],
                 ["the same, a new name every call (through rank 0)", f"{us['unnamed_mpirep'] / us['unnamed_mpi']:.2f}"]]
    peers = (results.get("hosts") or {}).get("rates", {}).get("1gbit", {}).get("peers", {}).get("cnn")
    if peers:
        ms = peers["ms"]
        rows += [["CNN training step, 2 hosts at 1 Gbit/s, mpirep (DistributedOptimizer) / the faster "
                  "`MultiWorkerMirroredStrategy`", f"{ms['mpirep_opt'] / min(ms['mwms'], ms['mwms_4mib']):.2f}"],
                 ["its gradient set alone, mpirep / the wire's bound", f"{ms['grads'] / peers['wire_ms']:.2f}"]]
    if not rows:
        return missing(results, "allreduce_sweep")
    return table(["measure (2 ranks)", "ratio"], rows)


def sweep(results, out_dir):
    runs = _per_np(results, "allreduce_sweep")
    if not runs:
        return missing(results, "allreduce_sweep")
    from plot import plot_sweep
    plot_sweep({f"np={n}": r for n, r in runs.items()}, out_dir / "benchmarks-allreduce.png")
    out = ["![bus bandwidth against size](benchmarks-allreduce.png)"]
    for n, run in runs.items():
        rows = [[human_bytes(r["bytes"]), f"{r['mpirep_s'] * 1e3:.3f}", f"{r['mpi_s'] * 1e3:.3f}",
                 f"{r['copy_s'] * 1e3:.3f}", f"{r['stream_copy_s'] * 1e3:.3f}", f"{r['mpirep_busbw']:.2f}",
                 f"{r['mpi_busbw']:.2f}", f"{r['ratio']:.2f}", f"{r['to_bound']:.2f}"] for r in run["rows"]]
        out += ["", f"{n} ranks:", "", table(["size", "mpirep ms", "MPI_Allreduce ms", "copy ms", "streamed copy ms",
                                               "mpirep busbw GB/s", "MPI busbw GB/s", "mpirep / MPI",
                                               "mpirep / bound"], rows)]
    return "\n".join(out)


def _round_row(label, r):
    s = r["seconds"]
    return [label, f"{s['mpirep'] * 1e3:.1f}", f"{s['mpi_fused'] * 1e3:.1f}", f"{s['mpi_per_tensor'] * 1e3:.1f}",
            f"{s['copy'] * 1e3:.1f}", f"{s['stream_copy'] * 1e3:.1f}", f"{r['ratio_to_best_mpi']:.2f}",
            f"{r['ratio_to_bound']:.2f}"]


ROUND_HEADER = ["mpirep round ms", "one MPI_Allreduce ms", "214 MPI_Allreduce ms", "copy ms", "streamed copy ms",
                "mpirep / faster MPI", "mpirep / bound"]


def resnet(results):
    runs = _per_np(results, "resnet50_round")
    if not runs:
        return missing(results, "resnet50_round")
    return table(["ranks", *ROUND_HEADER], [_round_row(str(n), r) for n, r in runs.items()])


def fusion(results):
    runs = results.get("fusion")
    if not runs:
        return missing(results, "fusion")
    return table(["fusion threshold", *ROUND_HEADER], [_round_row(human_bytes(int(t)), r) for t, r in runs.items()])


def small(results):
    runs = _per_np(results, "small_tensors")
    if not runs:
        return missing(results, "small_tensors")
    rows = []
    for n, r in runs.items():
        us = r["us_per_tensor"]
        for case, key in (("1,000 in flight", "batch"), ("one at a time, blocking", "single"),
                          ("one at a time, unnamed", "unnamed")):
            rows.append([str(n), case, f"{us[key + '_mpirep']:.1f}", f"{us[key + '_mpi']:.1f}",
                         f"{us[key + '_mpirep'] / us[key + '_mpi']:.2f}"])
    return table(["ranks", "case", "mpirep us/tensor", "MPI_Allreduce us/tensor", "ratio"], rows,
                 ["---:", "---", "---:", "---:", "---:"])


def idle(results):
    runs = _per_np(results, "small_tensors")
    if not runs:
        return missing(results, "small_tensors")
    rows = [[str(n), f"{r['us_per_tensor']['mpi_before_init']:.1f}", f"{r['us_per_tensor']['mpi_idle_mpirep']:.1f}",
             f"{r['us_per_tensor']['mpi_idle_mpirep'] / r['us_per_tensor']['mpi_before_init']:.2f}"]
            for n, r in runs.items()]
    return table(["ranks", "before mpirep.init, us", "after, mpirep idle, us", "after / before"], rows)


def coordinator(results, out_dir):
    runs = results.get("coordinator_cost")
    if not runs:
        return missing(results, "coordinator_cost")
    from plot import plot_coordinator_cost
    plot_coordinator_cost(runs, out_dir / "benchmarks-coordinator.png")
    rows = [[str(r["np"]), path, f"{c['rounds']:.1f}", f"{c['slow_rounds']:.1f}", f"{c['messages_received']:.1f}",
             f"{c['bytes_received']:.0f}", f"{c['requests_received']:.1f}", f"{c['work_ns'] / 1e3:.1f}"]
            for r in runs for path, c in r["per_step"].items()]
    return "\n".join(["![rank 0 CPU time per step against ranks](benchmarks-coordinator.png)", "",
                      table(["ranks", "path", "rounds", "slow rounds", "messages in", "bytes in", "requests",
                             "CPU us"], rows, ["---:", "---"] + ["---:"] * 6)])


def autotune(results):
    r = results.get("autotune")
    if not r:
        return missing(results, "autotune")
    t = r["seconds"]
    rows = []
    for case in t:
        tuned = r["tuning_rounds"][case]
        settings = "; ".join(" ".join(f[k] for k in ("fusion_threshold", "cycle_time_ms", "chunk_bytes"))
                             for f in r["final_settings"][case])
        rows.append([case, f"{t[case] * 1e3:.1f}", f"{r['ratio_to_defaults'][case]:.2f}",
                     f"{statistics.median(tuned):g}" if any(tuned) else "", settings])
    return "\n".join([f"{r['np']} ranks, {plural(r['repeats'], 'repeat')} x {plural(r['rounds'], 'round')}.", "",
                      table(["case", "round ms", "/ defaults", "tuning rounds",
                             "settings at the end of each run (threshold, cycle ms, chunk)"], rows,
                            ["---", "---:", "---:", "---:", "---"])])


def tf_bridges(results):
    r = results.get("tf_bridges")
    if not r:
        return missing(results, "tf_bridges")
    paths = list(dict.fromkeys(row["path"] for row in r["rows"]))
    sizes = list(dict.fromkeys(row["size"] for row in r["rows"]))
    seconds = {(row["size"], row["path"]): row["seconds"] for row in r["rows"]}
    rows = []
    for size in sizes:
        base = seconds[size, "numpy API"]
        rows.append([size] + [f"{seconds[size, p] * 1e3:.3f} ms ({seconds[size, p] / base:.2f}x)" for p in paths])
    return f"{r['np']} ranks; each cell: median per call, and its ratio to the numpy API.\n\n" + table(["size"] + paths, rows)


def tf_resnet(results):
    r = results.get("tf_resnet50_round")
    if not r:
        return missing(results, "tf_resnet50_round")
    s = r["seconds"]
    return table(["ranks", "tf.function round ms", "numpy API round ms", "tf.function / numpy API"],
                 [[str(r["np"]), f"{s['tf.function'] * 1e3:.1f}", f"{s['numpy API'] * 1e3:.1f}", f"{r['tf_over_numpy']:.2f}"]])


def tf_training(results):
    runs = _per_np(results, "tf_training")
    if not runs:
        return missing(results, "tf_training")
    rows = []
    for n, r in runs.items():
        for method, m in r["methods"].items():
            low, high = m["quartiles"]
            rows.append([str(n), method, f"{m['images_per_sec_per_rank']:.1f}", f"{m['ratio_to_alone']:.3f}",
                         f"{low:.3f}-{high:.3f}"])
    return table(["ranks", "method", "images/s per rank", "ratio to alone", "quartiles"], rows,
                 ["---:", "---", "---:", "---:", "---:"])


def tf_xla(results):
    run = results.get("tf_xla")
    if not run:
        return missing(results, "tf_xla")
    rows = [[name, f"{r['cached_tensors'] + r['requests_sent']:.2f}", f"{r['slow_rounds']:.2f}",
             f"{r['collectives']:.2f}", f"{r['gradients_per_collective']:.2f}"]
            for name, r in run["results"].items()]
    return table(["step", "tensors", "slow rounds", "collectives", "gradients each"], rows)


def _zero_step_row(label, step):
    seconds = step["seconds"]
    low, high = step["quartiles"]
    return [label, f"{statistics.median(seconds['ZeRO']) * 1e3:.0f}",
            f"{statistics.median(seconds['Distributed']) * 1e3:.0f}", f"{step['median']:.2f}",
            f"{low:.2f}-{high:.2f}", str(len(step["ratios"]))]


ZERO_STEP_HEADER = ["", "ZeRO ms", "Distributed ms", "ZeRO / Distributed", "quartiles", "rounds"]


def zero(results):
    runs = _per_np(results, "zero")
    if not runs:
        return missing(results, "zero")
    mib = 2.0 ** 20
    rows = []
    for n, r in runs.items():
        ratios = [per["ZeRO"]["state_bytes"] / per["Distributed"]["state_bytes"] for per in r["state"]["ranks"]]
        growth = [per["ZeRO"]["rss_growth_bytes"] / mib for per in r["state"]["ranks"]]
        dist_growth = [per["Distributed"]["rss_growth_bytes"] / mib for per in r["state"]["ranks"]]
        copies = [per["ZeRO"].get("slice_copy_bytes", 0) / mib for per in r["state"]["ranks"]]
        rows.append([str(n), f"{max(per['ZeRO']['state_bytes'] for per in r['state']['ranks']) / mib:.1f}",
                     f"{r['state']['ranks'][0]['Distributed']['state_bytes'] / mib:.1f}", f"{max(ratios):.3f}",
                     f"{1 / n + 0.05:.3f}", f"{max(copies):.1f}", f"{min(growth):.0f}-{max(growth):.0f}",
                     f"{min(dist_growth):.0f}-{max(dist_growth):.0f}"])
    out = [table(["np", "ZeRO state MiB (largest rank)", "Distributed state MiB", "ratio", "target",
                  "ZeRO slice copies MiB (largest rank)", "RSS growth ZeRO MiB",
                  "RSS growth Distributed MiB"], rows, ["---:"] * 8)]
    steps = [_zero_step_row(f"np={n}, one host", r["step"]) for n, r in runs.items() if "step" in r]
    if steps:
        out += ["", table(ZERO_STEP_HEADER, steps)]
    return "\n".join(out)


def hosts_zero(results):
    hosts = results.get("hosts")
    if not hosts:
        return missing(results, "hosts")
    rows = [_zero_step_row(_link(rate, result), result["zero"]["step"])
            for rate, result in hosts["rates"].items() if "zero" in result]
    return table(ZERO_STEP_HEADER, rows) if rows else missing(results, "hosts")


def elastic_commit(results):
    r = (results.get("elastic") or {}).get("commit")
    if not r:
        return missing(results, "elastic")
    s = r["seconds"]
    return "\n".join([f"{r['arrays']} arrays, {r['bytes'] / 1e6:.0f} MB, median of {plural(r['repeats'], 'timing')}.", "",
                      table(["measure", "ratio"], [
                          ["commit, one rank per host / np.copyto of the same arrays", f"{s['commit'] / s['copy']:.2f}"],
                          ["commit, each of 2 ranks on a host / np.copyto", f"{s['commit_half'] / s['copy']:.2f}"]])])


def elastic_recovery(results):
    r = (results.get("elastic") or {}).get("recovery")
    if not r:
        return missing(results, "elastic_recovery")
    m, base = r["median_s"], r["tensorflow_import_s"]
    rows = [["(baseline: a new Python process imports TensorFlow)", f"{base:.2f}"],
            ["the driver has noticed and stopped the generation", f"{m['noticed']:.2f}"],
            ["the next generation is launched", f"{m['relaunched']:.2f}"],
            ["its rank has started (Python, TensorFlow, `mpirep.init`)", f"{m['started']:.2f}"],
            ["it has restored the last commit (model built, state synced)", f"{m['resumed']:.2f}"],
            ["training has resumed: its first step is done", f"{m['stepped']:.2f}"],
            ["the same, over the baseline", f"{m['stepped'] / base:.2f}"],
            ["steps done twice, per job", " ".join(str(x) for x in r["redone"])]]
    return f"{plural(r['runs'], 'job')}.\n\n" + table(["event", "s"], rows)


def _ratio_cell(r):
    return f"{r['median']:.2f} ({r['min']:.2f}-{r['max']:.2f})"


def _link(rate, result):
    """The rate the link was shaped to, and what `dev/cluster/shape` measured it to carry."""
    measured = re.search(r"measured \S+ -> \S+: ([\d.]+ \S+)", result.get("shape_output", ""))
    return f"{rate} (measured {measured.group(1)})" if measured else rate


def hosts_sweep(results, out_dir):
    hosts = results.get("hosts")
    if not hosts:
        return missing(results, "hosts")
    from plot import plot_across_hosts
    plot_across_hosts({rate: r["sweep"] for rate, r in hosts["rates"].items()}, out_dir / "benchmarks-across-hosts.png")
    out = ["![allreduce time against the flat ring](benchmarks-across-hosts.png)"]
    for rate, result in hosts["rates"].items():
        rows = []
        for row in result["sweep"]["rows"]:
            across = "; ".join(f"{max(row['methods'][m]['across_per_host']):.2f}x" for m in ("flat", "hierarchical", "mpi"))
            rows.append([human_bytes(row["bytes"]), _ratio_cell(row["hierarchical_over_flat"]),
                         _ratio_cell(row["mpi_over_flat"]), across])
        out += ["", f"Link {_link(rate, result)}, {plural(result['sweep']['rounds'], 'round')}:", "",
                table(["size", "hierarchical / flat", "MPI_Allreduce / flat",
                       "bytes across per host (flat; hierarchical; MPI)"], rows, ["---", "---", "---", "---"])]
    return "\n".join(out)


def hosts_scaling(results):
    hosts = results.get("hosts")
    if not hosts:
        return missing(results, "hosts")
    rows = []
    for rate, result in hosts["rates"].items():
        rate_of = {(h, k): v for h, k, v in result["cnn"]}
        rows.append([_link(rate, result)] + [f"{rate_of[2, k] / (2 * rate_of[1, k]):.2f}" for k in (1, 2)])
    return table(["link", "2 hosts x 1 over 2 x (1 host x 1)", "2 hosts x 2 over 2 x (1 host x 2)"], rows)


def hosts_overlap(results):
    hosts = results.get("hosts")
    if not hosts:
        return missing(results, "hosts")
    rows = []
    for rate, result in hosts["rates"].items():
        for model, r in result["overlap"].items():
            ms, o = r["ms_per_step"], r["overlap"]
            rows.append([f"{model}, {r['mib']:.1f} MiB", _link(rate, result), f"{ms['alone']:.0f}", f"{ms['comm']:.0f}",
                         f"{ms['dist']:.0f}", f"{ms['forward']:.0f}", f"{o['median']:.2f} ({o['min']:.2f} to {o['max']:.2f})",
                         f"{r['bound']:.2f}"])
    return table(["model", "link", "alone ms", "comm ms", "dist ms", "forward ms", "overlap (rounds)", "bound"], rows,
                 ["---", "---"] + ["---:"] * 6)


PEER_STEPS = (("mwms", "MWMS"), ("mwms_4mib", "MWMS, 4 MiB packs"), ("mpirep_opt", "mpirep, DistributedOptimizer"),
              ("mpirep_tape", "mpirep, DistributedGradientTape"))


def hosts_peers(results, out_dir):
    hosts = results.get("hosts")
    runs = {rate: result["peers"] for rate, result in (hosts or {}).get("rates", {}).items() if "peers" in result}
    if not runs:
        return missing(results, "hosts")
    from plot import plot_peers
    plot_peers(runs, PEER_STEPS, out_dir / "benchmarks-peers.png")
    rows = []
    for rate, models in runs.items():
        for model, r in models.items():
            ms = r["ms"]
            best = min(ms["mwms"], ms["mwms_4mib"])
            steps = [f"{ms[key]:.0f} ({ms[key] / best:.2f}; {ms[key] / r['bound_ms']:.2f})" for key, _ in PEER_STEPS]
            rows.append([f"{model}, {r['mib']:.1f} MiB", f"{rate} ({r['link_gbit']:.2f} Gbit/s)", *steps,
                         f"{ms['grads']:.0f} ({ms['grads'] / r['wire_ms']:.2f})", f"{r['bound_ms']:.0f}"])
    return ("![step time over its bound](benchmarks-peers.png)\n\n"
            + table(["model", "link (TCP both ways)", *(f"{name} ms" for _, name in PEER_STEPS),
                     "gradient set alone, mpirep ms (/ wire)", "step bound ms"], rows, ["---", "---"] + ["---:"] * 6))
