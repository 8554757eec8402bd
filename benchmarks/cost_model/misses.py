"""What the check's misses have in common, for report.py: every layout's allreduce beside
MPI_Allreduce on the same buffer in the same job, and for each kind of miss, what was measured
and the mechanism read from the code that the model leaves out. A paragraph is written only where
the check has misses of its kind, with the figures of the measurements.

The kinds: more ranks than cores on one host, which Open MPI knows of; emulated hosts that
together run more ranks than the machine has cores, which it does not (dev/cluster/mpirun-hosts
gives each host as many slots as it runs ranks); and, otherwise across hosts, the emulated
link, a token bucket.
"""
import alpha_beta as ab
from check import what
from fit import INTER_FIT, INTRA_FIT
from units import human_bytes

KIB, MIB = 1 << 10, 1 << 20
FLOOR_SIZES = (4 * KIB, 64 * KIB, MIB)


def ranks_per_core(layout, cores):
    return layout.hosts * layout.per_host / cores


def sweep(points, layout, nbytes):
    """The allreduce of nbytes on layout, or None where it was not measured (a failed job)."""
    return next((p for p in points if p.layout == layout and p.kind == "sweep" and p.nbytes == nbytes), None)


def resnet(points, layout):
    return next((p for p in points if p.layout == layout and p.kind == "resnet"), None)


def ms(seconds):
    return f"{seconds * 1e3:.3g}"


def by_layout(layouts):
    return sorted(layouts, key=lambda layout: (layout.hosts, layout.per_host, layout.hierarchical))


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
    base = sweep(points, INTRA_FIT, 4 * KIB)
    crowded = (sweep(points, layout, 4 * KIB) for layout in by_layout({p.layout for p, _, _ in misses}))
    ratios = " and ".join(f"{p.seconds / base.seconds:.1f}x and {p.mpi_seconds / base.mpi_seconds:.1f}x as "
                          f"long on {p.layout}" for p in crowded if p)
    return (
        "**More ranks than cores on one host.** The model shares a host's cores among its ranks "
        "(intra-host costs x k/cores), which prices their throughput; it has no term for the wait of "
        "a step whose partner sits in the run queue behind another rank on its core. That wait comes "
        "with every dependent message, not with bytes, so it shows at small and middle sizes. The fit "
        f"cannot see it (on {INTRA_FIT} each rank has a core), and mpirep's wait constants are not "
        "the main part of it: a waiting rank polls (without yielding for its first 5 us) and yields "
        "through a spin window, 100 us in "
        "negotiation and 2 ms in the data path, and only then sleeps, 20 us doubling up to 200 and "
        "50 us (`native/runtime/runtime.cc`, `native/runtime/mpi_transport.h`), so until a wait "
        "outlasts its window the rank sees its message at the first poll after the partner has run. "
        "Open MPI has no such windows; it knows that these hosts are oversubscribed and yields while "
        f"it polls; and it slows down too: at 4 KiB, against their time on {INTRA_FIT}, mpirep and MPI_Allreduce take "
        f"{ratios} (table above). The projections give each rank a core. Misses: {listed(misses)}.")


def hidden_oversubscription(misses, points, fitted):
    layouts = by_layout({p.layout for p, _, _ in misses})
    mpirep = [p.seconds for p, _, _ in misses]
    mpi = [p.mpi_seconds for p, _, _ in misses]
    base = sweep(points, INTER_FIT, 4 * KIB)
    base_round = resnet(points, INTER_FIT)
    measured_rounds = [r for r in (resnet(points, layout) for layout in layouts) if r and base_round]
    rounds = "; ".join(
        f"on {r.layout}, mpirep's {r.seconds / base_round.seconds:.2f}x (the model: "
        f"{fitted.predict(r) / fitted.predict(base_round):.2f}x), MPI_Allreduce's "
        f"{r.mpi_seconds / base_round.mpi_seconds:.2f}x" for r in measured_rounds)
    return (
        f"**Emulated hosts with more ranks than the machine has cores: a floor of milliseconds.** "
        f"On {' and '.join(map(str, layouts))}, {layouts[0].hosts * layouts[0].per_host} ranks share "
        f"{fitted.machine_cores} cores, but Open MPI does not know it: `dev/cluster/mpirun-hosts` gives each "
        "emulated host as many slots as it runs ranks, so no host is oversubscribed in its view, "
        "and then its blocking calls poll without yielding (Open MPI turns `mpi_yield_when_idle` "
        "on only on an oversubscribed node; `mpirun --oversubscribe` with 3 or 4 ranks on this "
        "machine is one, so the shared-memory runs yield). Such calls are the harness's barrier "
        "before each timed call and its MAX allreduce after it (`benchmarks/common.py`), and "
        "MPI_Allreduce itself. A process that polls without yielding keeps its core until the "
        "scheduler's tick, 4 ms on this kernel (CONFIG_HZ=250), and a rank whose partner is "
        "queued behind it waits as long. Measured: the missed allreduces take "
        f"{ms(min(mpirep))}-{ms(max(mpirep))} ms with mpirep and {ms(min(mpi))}-{ms(max(mpi))} ms "
        f"with MPI_Allreduce in the same jobs, against {ms(base.seconds)} and {ms(base.mpi_seconds)} "
        f"ms at 4 KiB on {INTER_FIT}. "
        + (f"Against their time on {INTER_FIT}, the ResNet-50 round takes, {rounds} (MPI_Allreduce "
           "reduces its 214 tensors one at a time, polling without yielding in each). " if rounds else "")
        + "This belongs "
        "to the test bed (a real host has a core per rank) and the harness, not to the allreduce, "
        "and the model leaves it out. It is read from the code and these figures, not isolated by "
        "a run; one with `mpi_yield_when_idle` set would test it. Misses: "
        f"{listed(misses)}.")


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
        + (f"Where calls are milliseconds apart (the floor above) it can refill between them: "
           f"{'; '.join(fast)}. " if fast else "")
        + f"At the other end, the rate of the bytes across hosts on {INTER_FIT} came to {rates} "
        f"Gbit/s at {', '.join(human_bytes(p.nbytes) for p in large)} against the "
        f"{fitted.inter_rate / 1e9:g} Gbit/s shaped, so one beta cannot fit both ends; why the "
        f"long transfers ran slower was not established. The projections price a plain wire, "
        f"8/rate per byte. Misses: {listed(misses)}.")


def paragraphs(misses, points, fitted):
    """A paragraph for each kind of miss among `misses` (check.check_lines'), and one listing
    those of no kind named here."""
    cores = fitted.machine_cores
    kinds = {"crowded": [], "hidden": [], "link": [], "other": []}
    for miss in misses:
        layout, error = miss[0].layout, miss[2]
        crowded = ranks_per_core(layout, cores) > 1
        kind = ("crowded" if layout.hosts == 1 and crowded else
                "hidden" if layout.hosts > 1 and crowded and error < 0 else
                "link" if layout.hosts > 1 else "other")
        kinds[kind].append(miss)
    out = []
    if kinds["crowded"]:
        out.append(crowded_host(kinds["crowded"], points))
    if kinds["hidden"]:
        out.append(hidden_oversubscription(kinds["hidden"], points, fitted))
    if kinds["link"]:
        out.append(token_bucket(kinds["link"], points, fitted))
    if kinds["other"]:
        out.append(f"**Not explained here:** {listed(kinds['other'])}.")
    return out
