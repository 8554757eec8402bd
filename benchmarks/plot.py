"""Draw the allreduce sweep: bus bandwidth against message size, mpirep and MPI_Allreduce."""
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from units import human_bytes  # noqa: E402


def plot_sweep(runs, path):
    """runs: {label: sweep result dict as allreduce_sweep.py writes it}."""
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for label, run in runs.items():
        sizes = [row["bytes"] for row in run["rows"]]
        for key, style in (("mpirep_busbw", "-o"), ("mpi_busbw", "--s")):
            name = "mpirep" if key.startswith("mpirep") else "MPI_Allreduce"
            ax.plot(sizes, [row[key] for row in run["rows"]], style, label=f"{name}, {label}")
    ax.set_xscale("log", base=2)
    ax.set_xticks(sizes, [human_bytes(b).replace(" ", "\n") for b in sizes])
    _finish(fig, ax, path, "message size (float32)", "bus bandwidth (GB/s)",
            "allreduce (Sum), median over repeats")


def plot_coordinator_cost(runs, path):
    """runs: coordinator_cost.py results, one per rank count."""
    fig, ax = plt.subplots(figsize=(7, 4.5))
    nps = [r["np"] for r in runs]
    for key, style in (("full", "-o"), ("fast", "--s")):
        ax.plot(nps, [r["per_step"][key]["work_ns"] / 1e3 for r in runs], style,
                label="full path (cache off)" if key == "full" else "fast path (cache on)")
    ax.set_xscale("log", base=2)
    ax.set_xticks(nps, [str(n) for n in nps])
    _finish(fig, ax, path, "ranks", "rank 0 negotiation CPU us per step", "16 tiny allreduces per step")


def _finish(fig, ax, path, xlabel, ylabel, title):
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def plot_across_hosts(sweeps, path):
    """sweeps: {link rate: result dict as across_hosts_sweep.py writes it}. Time of the
    hierarchical allreduce and of MPI_Allreduce relative to the flat ring, against size."""
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for rate, sweep in sweeps.items():
        sizes = [row["bytes"] for row in sweep["rows"]]
        for key, name, style in (("hierarchical_over_flat", "hierarchical", "-o"),
                                 ("mpi_over_flat", "MPI_Allreduce", "--s")):
            ax.plot(sizes, [row[key]["median"] for row in sweep["rows"]], style,
                    label=f"{name}, {rate}")
    ax.axhline(1.0, color="grey", linewidth=1, label="flat ring")
    ax.set_xscale("log", base=2)
    ax.set_xticks(sizes, [human_bytes(b).replace(" ", "\n") for b in sizes])
    ax.set_xlabel("message size (float32)")
    ax.set_ylabel("time / flat ring's time")
    ax.set_title(f"allreduce (Sum), {sweep['hosts']} hosts x {sweep['per_host']} ranks")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def plot_peers(runs, steps, path):
    """runs: {link rate: {model: result dict as step_vs_mwms.py writes it}}; steps: (key, label)
    pairs. Each way's step time over the step's bound, grouped by model and link."""
    groups = [(f"{model}\n{rate}", r) for rate, models in runs.items() for model, r in models.items()]
    fig, ax = plt.subplots(figsize=(8, 4.5))
    width = 0.8 / len(steps)
    for i, (key, label) in enumerate(steps):
        ax.bar([g + i * width for g in range(len(groups))], [r["ms"][key] / r["bound_ms"] for _, r in groups],
               width, label=label)
    ax.axhline(1.0, color="grey", linewidth=1, label="bound")
    ax.set_xticks([g + width * (len(steps) - 1) / 2 for g in range(len(groups))], [name for name, _ in groups])
    ax.set_ylabel("step time / step's bound")
    ax.set_title("training step, 2 hosts x 1 rank")
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
