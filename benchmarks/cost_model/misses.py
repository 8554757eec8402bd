"""What the check's misses have in common, for report.py: every layout's allreduce beside
MPI_Allreduce on the same buffer in the same job, and for each kind of miss, what was measured
and the mechanism read from the code that the model leaves out. A paragraph is written only where
the check has misses of its kind, with the figures of the measurements.

The kinds: more ranks than the machine has cores, under-predicted (on one host, or on emulated
hosts that share the machine); otherwise across hosts, the emulated link, a token bucket;
otherwise on one host, under-predicted where the bytes came from memory instead of the cache.
"""
import statistics

import alpha_beta as ab
from check import what
from fit import INTER_FIT, INTRA_FIT, SHM_FIT
from measurements import RESNET50_TENSOR_BYTES
from units import human_bytes

KIB, MIB = 1 << 10, 1 << 20
FLOOR_SIZES = (4 * KIB, 64 * KIB, MIB)
# A point's bytes came from memory where every rank copying them at once, in the same job, ran at
# under this fraction of such copies' median rate over its layout's sweep from the size at which
# bytes outweigh per-message costs (there the sweep sets the betas).
OUT_OF_CACHE = 2 / 3
BYTES_DOMINATE = MIB


def ranks_per_core(layout, cores):
    return layout.hosts * layout.per_host / cores


def sweep(points, layout, nbytes):
    """The allreduce of nbytes on layout, or None where it was not measured (a failed job)."""
    return next((p for p in points if p.layout == layout and p.kind == "sweep" and p.nbytes == nbytes), None)


def ms(seconds):
    return f"{seconds * 1e3:.3g}"


def by_layout(layouts):
    return sorted(layouts, key=lambda layout: (layout.hosts, layout.per_host, layout.hierarchical, layout.shm))


def wire_seconds(point, fitted):
    """The model's time for the point's allreduce with nothing but its bytes across hosts, at the
    rate the link was shaped to."""
    bare = ab.Cluster(point.layout.hosts, point.layout.per_host, ab.Link(0.0, 0.0),
                      ab.Link(0.0, 8 / fitted.inter_rate))
    return ab.allreduce(point.nbytes, bare, hierarchical=point.layout.hierarchical)


def floor_table(points, fitted):
    sizes = [human_bytes(n) for n in FLOOR_SIZES]
    lines = ["| configuration | ranks per core | " + " | ".join(f"{s}: mpirep, MPI, model ms" for s in sizes)
             + " |", "|---|---:|" + "---:|" * len(sizes)]
    for layout in by_layout({p.layout for p in points}):
        found = [sweep(points, layout, nbytes) for nbytes in FLOOR_SIZES]
        cells = [f"{ms(p.seconds)}, {ms(p.mpi_seconds)}, {ms(fitted.predict(p))}" if p else "-" for p in found]
        lines.append(f"| {layout} | {ranks_per_core(layout, fitted.machine_cores):g} | "
                     + " | ".join(cells) + " |")
    return lines


def listed(misses):
    items = {}
    for p, _, error in misses:
        items.setdefault(p.layout, []).append(f"{what(p).removeprefix('allreduce ')} ({error:+.0%})")
    return "; ".join(f"{layout}: {', '.join(items[layout])}" for layout in by_layout(items))


def crowded_host(misses, points):
    def base(layout):  # the same kind of link with a core per rank
        one_host = SHM_FIT if layout.shm else INTRA_FIT
        return sweep(points, one_host if layout.hosts == 1 else INTER_FIT, 4 * KIB)
    crowded = [(sweep(points, layout, 4 * KIB), base(layout))
               for layout in by_layout({p.layout for p, _, _ in misses})]
    ratios = " and ".join(f"{p.seconds / b.seconds:.1f}x and {p.mpi_seconds / b.mpi_seconds:.1f}x as "
                          f"long on {p.layout} (against {b.layout})" for p, b in crowded if p and b)
    return (
        "**More ranks than cores.** The model shares a host's cores among its ranks "
        "(intra-host costs x k/cores), which prices their throughput; it has no term for the wait of "
        "a step whose partner sits in the run queue behind another rank on its core. That wait comes "
        "with every dependent message, not with bytes, so it shows at small and middle sizes. The fit "
        f"cannot see it (on {INTRA_FIT}, {SHM_FIT} and {INTER_FIT} each rank has a core), and mpirep's "
        "wait constants are not the main part of it: a waiting rank polls (without yielding for its "
        "first 5 us) and yields through a spin window, 100 us in negotiation and 2 ms in the data path "
        "and the shared-memory waits, and only then sleeps, 20 us doubling up to 200 and 50 us "
        "(`native/runtime/runtime.cc`, `native/runtime/mpi_transport.h`, "
        "`native/core/shm_collectives.cc`), so until a wait outlasts its window the rank sees its "
        "message at the first poll after the partner has run. Open MPI has no such windows and "
        "yields while it polls where it knows the ranks outnumber the cores (`mpirun "
        "--oversubscribe` on one host; on the emulated hosts, which share this machine's cores, "
        "`dev/cluster/mpirun-hosts` sets `mpi_yield_when_idle`, without which a small allreduce on "
        "2 hosts x 2 took 3.7-5.6 ms: a rank that polls without yielding keeps its core until the "
        "scheduler's tick); and it slows down too: at 4 KiB, mpirep and MPI_Allreduce take "
        f"{ratios} (table above). The projections give each rank a core. Misses: {listed(misses)}.")


def token_bucket(misses, points, fitted):
    small = [sweep(points, INTER_FIT, n) for n in (4 * KIB, 16 * KIB)]
    fast = [f"{p.layout} at {human_bytes(p.nbytes)} took {ms(p.seconds)} ms, its bytes across "
            f"hosts need {ms(wire_seconds(p, fitted))} ms at the shaped rate"
            for p, _, error in misses if error > 0 and p.layout != INTER_FIT]
    large = [p for p in (sweep(points, INTER_FIT, n) for n in (MIB, 4 * MIB, 16 * MIB, 64 * MIB)) if p]
    rates = ", ".join(f"{fitted.inter_rate * wire_seconds(p, fitted) / p.seconds / 1e9:.2f}" for p in large)
    return (
        "**The emulated link is a token bucket, not a wire.** `dev/cluster/shape` limits what each "
        "host sends with tc's token-bucket filter (a 1 MB bucket by default, no added delay): "
        "traffic that finds tokens leaves at the unshaped speed of the hosts' virtual interfaces, "
        "and only the rest waits for the shaped rate. On "
        f"{INTER_FIT}, the configuration the link is fitted to, 4 KiB and 16 KiB took "
        f"{ms(small[0].seconds)} and {ms(small[1].seconds)} ms, as if their bytes cost nothing (at "
        "their rate the bucket does not run dry), which one alpha and one beta cannot follow. "
        + (f"Where calls leave gaps it can refill between them: "
           f"{'; '.join(fast)}. " if fast else "")
        + f"At the other end, the rate of the bytes across hosts on {INTER_FIT} came to {rates} "
        f"Gbit/s at {', '.join(human_bytes(p.nbytes) for p in large)} against the "
        f"{fitted.inter_rate / 1e9:g} Gbit/s shaped, so one beta cannot fit both ends; why the "
        f"long transfers ran slower was not established. The projections price a plain wire, "
        f"8/rate per byte. Misses: {listed(misses)}.")


def copy_rate(point):
    """Bytes per second per rank of every rank copying the point's bytes at once."""
    return point.nbytes / point.copy_seconds


def sweep_copy_rate(points, layout):
    return statistics.median(copy_rate(p) for p in points
                             if p.layout == layout and p.kind == "sweep" and p.nbytes >= BYTES_DOMINATE)


def out_of_cache(point, points):
    return copy_rate(point) < OUT_OF_CACHE * sweep_copy_rate(points, point.layout)


def gbs(rate):
    return f"{rate / 1e9:.1f}"


def from_memory(misses, points):
    layouts = by_layout({p.layout for p, _, _ in misses})
    typical = "; ".join(f"{layout}: {gbs(sweep_copy_rate(points, layout))} GB/s" for layout in layouts)
    slow = "; ".join(f"{p.layout}, {what(p)}: {gbs(copy_rate(p))} GB/s, predicted {ms(predicted)} ms, measured "
                     f"{ms(p.seconds)} ms" for p, predicted, _ in misses)
    return (
        "**Out of the cache.** The sweep repeats one buffer per size, so up to some size the cache "
        "holds it, and the fitted betas are rates from the cache. Where the bytes stream from memory "
        "instead, each costs more. The sweep and the round time every rank copying the same bytes at "
        "once, in the same job, and that copy shows where the cache stopped holding them. Its median "
        f"rate per rank over the sweep from {human_bytes(BYTES_DOMINATE)}, where bytes outweigh "
        f"per-message costs and so set the betas: {typical}. The misses of this kind are "
        f"under-predicted points whose copy ran at under {OUT_OF_CACHE:.0%} of that: {slow}. The ResNet-50 round passes "
        f"{sum(RESNET50_TENSOR_BYTES) / MIB:.1f} MiB of gradients and as many outputs, which stream "
        "from memory on any host whose cache is smaller. The projections use the rates "
        "from the cache, so inside a host they flatter the per-byte costs of gradient sets larger than "
        f"its cache. Misses: {listed(misses)}.")


def paragraphs(misses, points, fitted):
    """A paragraph for each kind of miss among `misses` (check.check_lines'), and one listing
    those of no kind named here."""
    cores = fitted.machine_cores
    kinds = {"crowded": [], "link": [], "memory": [], "other": []}
    for miss in misses:
        point, error = miss[0], miss[2]
        if ranks_per_core(point.layout, cores) > 1 and error < 0:
            kind = "crowded"
        elif point.layout.hosts > 1:
            kind = "link"
        elif error < 0 and out_of_cache(point, points):
            kind = "memory"
        else:
            kind = "other"
        kinds[kind].append(miss)
    out = []
    if kinds["crowded"]:
        out.append(crowded_host(kinds["crowded"], points))
    if kinds["link"]:
        out.append(token_bucket(kinds["link"], points, fitted))
    if kinds["memory"]:
        out.append(from_memory(kinds["memory"], points))
    if kinds["other"]:
        out.append(f"**Not explained here:** {listed(kinds['other'])}.")
    return out
