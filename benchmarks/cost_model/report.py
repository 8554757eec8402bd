"""The "Cost model" section of docs/benchmarks.md from the measurements (fitted parameters,
the check and what its misses have in common, the projection to 512 ranks, Horovod's published
figures), and its figure, docs/benchmarks-cost-model.png. benchmarks/run_all.py puts the
section into the page it writes.

    python benchmarks/cost_model/report.py [--shm FILE] [--hosts FILE] [--copy FILE]
                                          [--section-out FILE] [--png-dir DIR]
"""
import argparse
import dataclasses
from pathlib import Path

import alpha_beta as ab
from check import check_lines, conditions, fitted_lines
from draw import DOCS, PNG, draw
from fit import add_file_arguments, fit_files
from misses import floor_table, paragraphs
from scale_table import (RANK_LAYOUTS, RATES, allreduce_table, efficiency_table, projected_cluster,
                         published_table, ranks_table)
from units import human_bytes
from workloads import BACKWARD_FRACTION, WORKLOADS

HEADING = "## Cost model"
DEFAULTS = ab.Settings()
LARGE_FUSION = 64 << 20

INTRO = f"""\
An alpha-beta model of mpirep's allreduce and of a data-parallel training step, fitted to
measurements taken on this machine and checked against every configuration measurable here;
then projected to 512 ranks. Code and formulas: `benchmarks/cost_model/` (the formulas are
written out at the top of `alpha_beta.py`; `tests/unit/test_cost_model.py` tests them).

* A link costs alpha per message and beta per byte; `intra` joins the ranks of one host (the
  ring's messages through MPI's shared memory), `inter` the hosts.
* Flat ring on p ranks: 2(p-1) steps of n/p bytes, each as slow as its slowest hop (across hosts:
  the inter-host hop, whose bytes all go through the host's one interface).
* Recursive doubling on p ranks (p2 the largest power of two not above p): log2(p2) exchanges
  of all n bytes, plus a hand-in and a hand-back where p is not a power of two; each step as
  slow as its slowest pair (an inter-host hop where some pair of the step crosses hosts).
* Hierarchical (k ranks per host, N hosts): reduce-scatter in the host, 2(k-1) intra steps of
  n/k bytes; one ring per local index across the hosts, 2(N-1) inter steps, the k rings
  together moving n/N bytes per step through the interface; allgather in the host.
* The shared-memory collectives (docs/core.md, `shm_allreduce`, on by default) have costs of
  their own, `shm`: alpha per wait on the other ranks' flags, beta per byte of the buffer. They
  go in blocks of `shm_slot_bytes` ({human_bytes(DEFAULTS.shm_slot_bytes)}). The allreduce on
  one host waits twice per block (until all have copied in, until all have reduced):
  2 ceil(n/slot) alpha + n beta. Each rank moves about the same bytes whatever k (it copies
  (k-1)/k of the buffer in, reduces its 1/k share from k operands, and copies all of it out),
  so beta is per byte of the buffer at every k. The hierarchical allreduce's stages inside the
  host run on it too: a reduce-scatter (two waits per block) and an allgather (one), which
  between them move what the allreduce moves: 3 ceil(n/slot) alpha + n beta. The flat
  allreduce of ranks on several hosts is the ring, as in mpirep.
* Which runs: the hierarchical allreduce where it is chosen; otherwise the shared-memory
  allreduce where the ranks are all on one host; otherwise recursive doubling for a buffer (a
  fused one by its total size) of at most `small_allreduce_bytes`
  ({human_bytes(DEFAULTS.small_allreduce_bytes)}) at 3 ranks or more; otherwise the flat
  ring (always at 2 ranks). Layouts marked "shm" below ran with `shm_allreduce=1`, the others
  with 0 (each host's ranks on the ring).
* Intra-host costs, the shared-memory collectives' included, are multiplied by k/cores where a
  host runs more ranks than it has cores.
* Negotiation: every round ANDs a few hundred bytes of agreement words among all ranks by
  recursive doubling, each step one alpha of its slowest hop (the links' own alpha: a separate
  one would be a second constant that the fit could not tell from it). A tensor run before
  under the same name and request needs nothing more: a cached round. A new one (a first call,
  or any unnamed call, which gets a new name each time) also needs the slow phase: rank 0
  handles one request and one response per other rank, 2(p-1) alpha_intra, plus one round
  trip over the slowest link, 2 alpha. A blocking allreduce is a round and a collective, run
  on the caller's thread (no hand-off to charge). The allreduce sweeps below are unnamed, so
  each call is a slow round; the ResNet-50 rounds repeat named gradients, so theirs are cached
  rounds, as a training step's are after the first.
* A set of gradients is packed into buffers as the fusion planner packs them (in order, up
  to the fusion threshold; a tensor of small_allreduce_bytes x p or more alone), each buffer a round and
  a collective, a buffer of several tensors also copies of its bytes at the memory-copy cost
  `memcpy.py` measures: one to unpack it, and its packing, which the flat ring does for 1/p of
  it (the segment it sends first) and doubling and the hierarchical allreduce for all of it.
  The shared-memory allreduce copies nothing more: it reads the tensors where they lie and
  writes into the outputs.
* A training step: compute + exposed communication. Without overlap all communication is
  exposed; with overlap it runs during the backward pass (taken as
  {BACKWARD_FRACTION:.2f} of the compute), so only what exceeds it is exposed, and never less
  than the last buffer. Scaling efficiency = compute / step.

Fitting: least squares of the relative error over the sizes of one allreduce sweep per link:
`intra` on 1 host x 2 ranks with `shm_allreduce=0` (the one layout on one host with no more
ranks than cores), `shm` on the same with `shm_allreduce=1` (`intra` already fitted: the
negotiation still goes by MPI messages), the emulated link on 2 hosts x 1 rank (`dev/cluster/shape`, no added delay: this kernel has no netem; the
emulated hosts share this machine's 2 cores, so the model gives each host 1).
Everything else is a prediction. The projections put mpirep's software costs, as the `intra`
fit measures them (alpha per message, beta per byte), on a wire of 25 or
100 Gbit/s (8/rate per byte, no wire latency added), and run each host's stages through shared
memory at the `shm` fit, as mpirep does by default; the emulated link's own fit is not carried
over: that link is a token bucket, not a wire (see "Where the model misses")."""


def per_message_and_bytes(fitted, settings, hosts=128, per_host=4, rate="25 Gbit/s"):
    """What each workload's gradients cost per step on the flat ring, split into per-message costs
    (the alphas, negotiation's included) and per-byte costs (the betas and the copies)."""
    cluster = projected_cluster(fitted, hosts, per_host, RATES[rate])
    free_messages = dataclasses.replace(cluster, intra=ab.Link(0.0, cluster.intra.beta),
                                        inter=ab.Link(0.0, cluster.inter.beta))
    parts = []
    for w in WORKLOADS:
        total = ab.gradient_round(w.tensor_bytes, cluster, settings)[0]
        by_bytes = ab.gradient_round(w.tensor_bytes, free_messages, settings)[0]
        buffers = len(ab.fused_buffers(w.tensor_bytes, settings.fusion_threshold, settings.solo_bytes(cluster.ranks)))
        parts.append(f"{w.name}: {buffers} buffers, {(total - by_bytes) * 1e3:.0f} ms per message and "
                     f"{by_bytes * 1e3:.0f} ms per byte")
    return f"at {hosts} x {per_host} over {rate}, {'; '.join(parts)}"


def section(measured):
    shm_meta, host_meta, fitted = measured.shm_meta, measured.host_meta, measured.fitted
    shm_points, host_points = measured.shm_points, measured.host_points
    check, misses = check_lines(shm_points + host_points, fitted, 0.25)
    verdict = (f"**All {len(check) - 2} predictions within 25%.**" if not misses else
               f"**{len(misses)} of {len(check) - 2} predictions are more than 25% off** "
               "(`check.py` exits 1 and lists them; what they have in common follows the table).")
    missing = [f"{'ResNet-50 round' if f['kind'] == 'resnet' else 'sweep'} on {f['hosts']} hosts x "
               f"{f['per_host']}{', hierarchical' if f['hierarchical'] else ''} (pass {f['pass']}, exit "
               f"{f['exit']}{', ' + f['note'] if 'note' in f else ''})"
               for meta in (shm_meta, host_meta) for f in meta.get("failed", [])]
    if missing:
        verdict += " Not measured: " + "; ".join(missing) + "."
    big = [p for p in host_points if p.nbytes >= 4 << 20]
    big_ok = sum(abs(fitted.predict(p) / p.seconds - 1) <= 0.25 for p in big)
    verdict += (f" Across hosts, where the {fitted.inter_rate / 1e9:g} Gbit/s link dominates (4 MiB and more, and the "
                f"ResNet-50 rounds), {big_ok} of {len(big)} are within 25%.")
    resnet = WORKLOADS[0]
    out = [HEADING, "", INTRO, "",
           "### Fitted parameters", "",
           f"Measured by `benchmarks/cost_model/measure.py` (each configuration a median over "
           f"repeats in each pass, then the median over passes, the configurations taking turns): "
           f"{conditions(shm_meta)}; {conditions(host_meta)}. A job's own ranks count in the load "
           "average: they poll while they wait.", "",
           *fitted_lines(fitted, shm_meta, host_meta), "",
           "### Check: predicted against measured", "",
           "Every configuration measurable here: 1 host x 2, 3, 4 ranks, on the ring and through "
           "shared memory (3 and 4 are oversubscribed on 2 cores), 2 emulated hosts x 1 and x 2 ranks, "
           "flat and hierarchical (its stages in the host on the ring, and through shared memory); "
           "for each, blocking allreduces of 4 KiB to 64 MiB and the ResNet-50 gradient round "
           f"(`benchmarks/resnet50_round.py`: 214 tensors, fusion threshold "
           f"{human_bytes(DEFAULTS.fusion_threshold)}). Load average: the machine's 1-minute load "
           "average as the job began (median over the passes); 2 cores. Error = predicted / "
           f"measured - 1. {verdict}", "",
           *check, "",
           "### Where the model misses", "",
           "Each layout's blocking allreduce beside Open MPI's MPI_Allreduce on the same buffer in "
           "the same job (`benchmarks/allreduce_sweep.py` times both), and the model's prediction:", "",
           *floor_table(shm_points + host_points, fitted), "",
           *[line for paragraph in paragraphs(misses, shm_points + host_points, fitted)
             for line in (paragraph, "")],
           f"![model projection and check]({PNG})", "",
           "### Projected to 512 ranks", "",
           "The `intra` fit's software costs over 25 and 100 Gbit/s links, each host's stages through "
           "shared memory at the `shm` fit, one core per rank, and each rank as much of the memory's "
           "bandwidth as it had here at 2 ranks (a host whose ranks saturate its memory is slower). The "
           f"{resnet.name} step computes for {resnet.compute_seconds * 1e3:.0f} ms: 64 images at the "
           f"{resnet.p100_images_per_second:g} images/s TensorFlow published for one Tesla P100 "
           "(DGX-1, synthetic data, batch 64, May 2017; [TensorFlow "
           "benchmarks](https://github.com/tensorflow/docs/blob/master/site/en/r1/guide/performance/benchmarks.md)). "
           "Beside each rate's efficiencies, the bound: the efficiency of a step that took no longer "
           "than its compute, or than its forward pass followed by the least the wire must carry "
           "(2(N-1)/N of the gradients through each host's interface), whichever is longer; no "
           "allreduce does better.", "",
           f"Scaling efficiency of the {resnet.name} step at "
           f"{', '.join(str(h * k) for h, k in RANK_LAYOUTS[:-1])} and {RANK_LAYOUTS[-1][0] * RANK_LAYOUTS[-1][1]} "
           "ranks, with overlap:", "",
           *ranks_table(fitted, resnet, DEFAULTS), ""]
    for per_host in (4, 8):
        out += [f"Allreduce of the {resnet.name} gradients ({resnet.gradient_bytes / 2**20:.1f} MiB, "
                f"fusion threshold {human_bytes(DEFAULTS.fusion_threshold)}), {per_host} ranks per host:", "",
                *allreduce_table(fitted, per_host, resnet, DEFAULTS), "",
                f"Scaling efficiency of the {resnet.name} step, {per_host} ranks per host:", "",
                *efficiency_table(fitted, per_host, resnet, DEFAULTS), ""]
    out += ["### Beside Horovod's published scaling", "",
            "[Horovod's benchmarks page](https://github.com/horovod/horovod/blob/master/docs/benchmarks.rst) "
            "reports, for 128 servers with 4 Pascal GPUs each on a RoCE-capable 25 Gbit/s network "
            "(512 GPUs, tf_cnn_benchmarks, batch 64 per GPU), 90% scaling efficiency for Inception V3 "
            "and ResNet-101 and 68% for VGG-16. ResNet-101 has no single-P100 rate in the TensorFlow "
            "table, so it is not modelled. The model below is mpirep's (CPU reduction, cached "
            "negotiation rounds, this machine's software costs) at 128 x 4 over 25 Gbit/s, with each "
            "model's Keras gradient tensors and the P100 compute time from the same TensorFlow "
            "table; Horovod reduced on the GPUs with NCCL.", "",
            f"At mpirep's default fusion threshold ({human_bytes(DEFAULTS.fusion_threshold)}):", "",
            *published_table(fitted, DEFAULTS), "",
            f"With a fusion threshold of {human_bytes(LARGE_FUSION)} (fewer buffers, so fewer "
            "per-message costs on a long ring and fewer negotiation rounds):", "",
            *published_table(fitted, ab.Settings(fusion_threshold=LARGE_FUSION)), "",
            "What the model says: at a few hundred ranks each fused buffer pays 2(p-1) per-message "
            "costs on a flat ring (its cached negotiation round only log2 p more), so at mpirep's "
            "defaults, for gradients made of many small tensors, the per-message costs can outweigh "
            "the bytes; per step on the flat ring, "
            f"{per_message_and_bytes(fitted, DEFAULTS)}. Hierarchical allreduce cuts the ring's "
            "share to 2(k-1) + 2(N-1) per-message costs; a larger fusion threshold cuts the number "
            "of buffers.", "",
            "### Redrawing", "",
            "```bash",
            "python benchmarks/cost_model/measure.py shm --out benchmarks/cost_model/measurements/shm.json",
            "python benchmarks/cost_model/memcpy.py --out benchmarks/cost_model/measurements/copy.json",
            "dev/cluster/hosts-up 2 && dev/cluster/shape 1gbit",
            "python benchmarks/cost_model/measure.py hosts --rate 1gbit \\",
            "    --out benchmarks/cost_model/measurements/hosts-1gbit.json",
            "dev/cluster/down",
            "python benchmarks/cost_model/check.py        # fitted parameters and the check; exit 1 beyond 25%",
            "python benchmarks/cost_model/scale_table.py  # the projection, --per-host K --fusion-threshold B",
            f"python benchmarks/cost_model/draw.py        # docs/{PNG} alone",
            "python benchmarks/cost_model/report.py       # this section (to stdout) and the PNG; both need matplotlib",
            "```", ""]
    return "\n".join(out)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_file_arguments(parser)
    parser.add_argument("--section-out", help="write the section here (default: standard output)")
    parser.add_argument("--png-dir", default=str(DOCS), help=f"where {PNG} goes (default: docs/)")
    args = parser.parse_args()
    measured = fit_files(args)
    text = section(measured)
    if args.section_out:
        Path(args.section_out).write_text(text)
    else:
        print(text)
    draw(measured, Path(args.png_dir) / PNG)


if __name__ == "__main__":
    main()
