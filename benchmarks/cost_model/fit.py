"""Fit the model's links to the measurements: alpha and beta by least squares of the relative
error (so that 4 KiB counts as much as 64 MiB) over the sizes of one configuration's allreduce
sweep; every other configuration is left for the check.

* intra (MPI's shared memory, the ring's messages): the sweep on 1 host x 2 ranks with
  shm_allreduce off, the one layout on one host with no more ranks than this machine has cores;
* shm (the shared-memory collectives): the sweep on 1 host x 2 ranks with shm_allreduce on,
  with intra already fitted (negotiation still goes by MPI messages);
* inter (the emulated link at the rate it was shaped to): the sweep on 2 hosts x 1 rank, with
  intra already fitted (it prices rank 0's handling of the slow phase's messages).

The sweeps' allreduces are unnamed, so every one is negotiated in a slow round; the ResNet-50
rounds repeat named gradients and run on cached rounds. Both kinds of round share the link's
alpha (alpha_beta.py says why); at 2 ranks the sweeps use the ring, never doubling, so the fit
prices the ring's steps and the check the doubling at 3 and 4 ranks.

The memory-copy cost that fusion's packing pays is measured directly (memcpy.py: the fastest
of repeated 128 MiB copies), not fitted.

The model is affine in the alpha and beta of one link, so its own functions give the columns of
the least-squares problem: nothing of the formulas is restated here.
"""
import dataclasses
import re
from dataclasses import dataclass

import numpy as np

import alpha_beta as ab
from measurements import COPY, HOSTS, RESNET50_TENSOR_BYTES, SHM, Layout, copy_cost, load

INTRA_FIT = Layout(1, 2, False)
SHM_FIT = Layout(1, 2, False, shm=True)
INTER_FIT = Layout(2, 1, False)
_UNITS = {"bit": 1, "kbit": 1e3, "mbit": 1e6, "gbit": 1e9, "tbit": 1e12}


def bits_per_second(rate):
    """tc's notation ("1gbit", "100mbit") in bits per second."""
    match = re.fullmatch(r"([0-9.]+)([a-z]+)", rate.strip().lower())
    if not match or match.group(2) not in _UNITS:
        raise ValueError(f"not a rate in tc's notation (e.g. 1gbit, 100mbit): {rate!r}")
    return float(match.group(1)) * _UNITS[match.group(2)]


def cluster_for(layout, intra, inter, shm, machine_cores, copy):
    # the emulated hosts all run on this one machine and share its cores
    return ab.Cluster(layout.hosts, layout.per_host, intra, inter,
                      max(1, machine_cores // layout.hosts), copy, shm if layout.shm else None)


def predict(point, intra, inter, shm, machine_cores, copy):
    cluster = cluster_for(point.layout, intra, inter, shm, machine_cores, copy)
    settings = ab.Settings()
    if point.fusion_threshold:
        settings = dataclasses.replace(settings, fusion_threshold=point.fusion_threshold)
    hierarchical = point.layout.hierarchical
    if point.kind == "sweep":
        # allreduce_sweep.py's calls are unnamed, so each gets a new name: a slow round each
        return ab.blocking_allreduce(point.nbytes, cluster, cached=False, settings=settings,
                                     hierarchical=hierarchical)
    # resnet50_round.py names its gradients and repeats them after a warm-up round: cached rounds
    return ab.gradient_round(RESNET50_TENSOR_BYTES, cluster, settings, hierarchical, cached=True)[0]


def least_squares(points, predict_with):
    """The Link minimising the relative error of predict_with(link, point) over points."""
    seconds = np.array([p.seconds for p in points])
    base = np.array([predict_with(ab.Link(0.0, 0.0), p) for p in points])
    per_alpha = np.array([predict_with(ab.Link(1.0, 0.0), p) for p in points]) - base
    per_beta = np.array([predict_with(ab.Link(0.0, 1.0), p) for p in points]) - base
    matrix = np.stack([per_alpha, per_beta], axis=1) / seconds[:, None]
    (alpha, beta), *_ = np.linalg.lstsq(matrix, (seconds - base) / seconds, rcond=None)
    if alpha < 0 or beta <= 0:
        raise ValueError(f"the fit gave alpha={alpha:.3g} s, beta={beta:.3g} s/B: the measurements "
                         "do not follow the model (too noisy?)")
    return ab.Link(float(alpha), float(beta))


@dataclass(frozen=True)
class Fitted:
    intra: ab.Link
    shm: ab.Link          # the shared-memory collectives
    inter: ab.Link        # at the rate the emulated link was shaped to
    inter_rate: float     # that rate, bits per second
    machine_cores: int
    copy: float           # seconds per byte of a memory copy (measured)

    def inter_at(self, rate):
        """A projected inter-host link of `rate` bits per second: mpirep's software costs per
        message and per byte, as shared memory (pure software) measures them, plus a wire that
        moves 8 bits per byte at `rate`. The emulated link's own fit is not used: that link is
        a token bucket on virtual interfaces of this one machine, not a wire (small transfers
        pass free of its rate), and its hosts share this machine's cores."""
        return ab.Link(self.intra.alpha, self.intra.beta + 8 / rate)

    def predict(self, point):
        return predict(point, self.intra, self.inter, self.shm, self.machine_cores, self.copy)


def sweep_points(points, layout):
    chosen = [p for p in points if p.kind == "sweep" and p.layout == layout]
    if not chosen:
        raise ValueError(f"no allreduce sweep on {layout} among the measurements")
    return chosen


def fit(shm_points, host_points, machine_cores, rate, copy):
    intra = least_squares(sweep_points(shm_points, INTRA_FIT),
                          lambda link, p: predict(p, link, link, None, machine_cores, copy))
    shm = least_squares(sweep_points(shm_points, SHM_FIT),
                        lambda link, p: predict(p, intra, intra, link, machine_cores, copy))
    inter = least_squares(sweep_points(host_points, INTER_FIT),
                          lambda link, p: predict(p, intra, link, None, machine_cores, copy))
    return Fitted(intra, shm, inter, bits_per_second(rate), machine_cores, copy)


@dataclass(frozen=True)
class Measured:
    shm_meta: dict
    shm_points: list
    host_meta: dict
    host_points: list
    fitted: Fitted


def add_file_arguments(parser):
    parser.add_argument("--shm", default=SHM, help="shared-memory measurements (measure.py shm)")
    parser.add_argument("--hosts", default=HOSTS, help="emulated-host measurements (measure.py hosts)")
    parser.add_argument("--copy", default=COPY, help="the memory-copy cost (memcpy.py)")


def fit_files(args):
    """Load the measurement files named by add_file_arguments' options and fit the model."""
    shm_path, hosts_path, copy_path = args.shm, args.hosts, args.copy
    shm_meta, shm_points = load(shm_path)
    host_meta, host_points = load(hosts_path)
    fitted = fit(shm_points, host_points, shm_meta["cores"], host_meta["rate"], copy_cost(copy_path))
    return Measured(shm_meta, shm_points, host_meta, host_points, fitted)
