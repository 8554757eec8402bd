"""The alpha-beta cost model of mpirep's allreduce and of a data-parallel training step.

A link costs `alpha` seconds per message plus `beta` seconds per byte. There are two: `intra`
between ranks of one host (shared memory) and `inter` between hosts. A job has `hosts` hosts of
`per_host` ranks each, p = hosts * per_host ranks, ranks numbered host by host.

Flat ring allreduce of n bytes (reduce-scatter then allgather, each p-1 steps; in every step
each rank sends n/p bytes to the next):

    ring(n, p, link) = 2 (p-1) (alpha + (n/p) beta)

Across hosts all ranks step together, so each step lasts as long as its slowest hop: the one
between hosts, or, where a host's ranks are oversubscribed or its memory is slower than the
network, a hop within a host:

    flat(n) = 2 (p-1) max(alpha_inter + (n/p) beta_inter,
                          (alpha_intra + (n/p) beta_intra) x oversubscription)   hosts > 1
    flat(n) = ring(n, k, intra) x oversubscription                              one host

(the intra term only where k > 1: with one rank per host every hop crosses hosts).

Hierarchical allreduce: reduce-scatter within each host (k-1 steps of n/k bytes), then one ring
across the hosts per local index, on that index's n/k bytes (the k rings run at once and share
the interface, so together they move n/hosts bytes per step), then allgather within the host:

    hier(n) = 2 (k-1) (alpha_intra + (n/k) beta_intra) x oversubscription
            + 2 (hosts-1) (alpha_inter + (n/hosts) beta_inter)

Oversubscription: the reduction and the copies are CPU work, and when a host runs more ranks
than it has cores they take turns: intra-host costs are multiplied by max(1, k / cores).

Negotiation, once per round: every rank sends rank 0 its request list and rank 0 answers each.
The messages travel at once, but rank 0 handles the 2 (p-1) of them one by one, each costing a
message's software overhead (alpha_intra, which on shared memory is nothing but that), and one
round trip crosses the slowest link:

    round(p) = 2 (p-1) alpha_intra + 2 alpha_slowest

A blocking allreduce is one round plus one collective. A set of gradients is reduced in fused
buffers, packed as mpirep's fusion planner packs them (native/core/fusion.cc): in order, each
tensor joins the open buffer if the buffer stays within the fusion threshold, else it opens a
new one; a tensor of at least chunk_bytes x p runs alone. Each buffer costs a round and a
collective, and a buffer of several tensors also two copies of its bytes (packing and
unpacking), at the host's memory-copy cost `copy` seconds per byte (x oversubscription).

A training step computes for `compute` seconds; the backward pass takes the last
`backward_fraction` of it and hands gradients over as it goes. Without overlap all
communication follows the compute. With overlap it runs during the backward pass, so only what
exceeds the backward time is exposed, and never less than the last buffer (the first layer's
gradients are ready only when the backward pass ends):

    exposed = comm                                              (no overlap)
    exposed = max(comm - backward, last buffer's time)          (overlap)
    step = compute + exposed,  efficiency = compute / step
"""
from dataclasses import dataclass


@dataclass(frozen=True)
class Link:
    alpha: float  # seconds per message
    beta: float   # seconds per byte

    def time(self, steps, nbytes_per_step):
        return steps * (self.alpha + nbytes_per_step * self.beta)


@dataclass(frozen=True)
class Cluster:
    hosts: int
    per_host: int
    intra: Link
    inter: Link
    cores_per_host: int = 1 << 30  # more than any rank count: no oversubscription
    copy: float = 0.0  # seconds per byte of a memory copy within a rank

    def __post_init__(self):
        for name in ("hosts", "per_host", "cores_per_host"):
            if getattr(self, name) < 1:
                raise ValueError(f"Cluster.{name} must be at least 1, got {getattr(self, name)}")

    @property
    def ranks(self):
        return self.hosts * self.per_host

    @property
    def oversubscription(self):
        return max(1.0, self.per_host / self.cores_per_host)


def _check_bytes(nbytes):
    if nbytes < 0:
        raise ValueError(f"a message cannot have {nbytes} bytes")


def flat_allreduce(nbytes, cluster):
    """Seconds for the flat ring over all ranks, without negotiation."""
    _check_bytes(nbytes)
    p = cluster.ranks
    if p == 1:
        return 0.0
    within = cluster.intra.time(2 * (p - 1), nbytes / p) * cluster.oversubscription
    if cluster.hosts == 1:
        return within
    across = cluster.inter.time(2 * (p - 1), nbytes / p)
    return max(across, within) if cluster.per_host > 1 else across


def hierarchical_allreduce(nbytes, cluster):
    """Seconds for reduce-scatter in the host, rings across hosts, allgather in the host."""
    _check_bytes(nbytes)
    k, hosts = cluster.per_host, cluster.hosts
    within = cluster.intra.time(2 * (k - 1), nbytes / k) * cluster.oversubscription
    across = cluster.inter.time(2 * (hosts - 1), nbytes / hosts) if hosts > 1 else 0.0
    return within + across


def allreduce(nbytes, cluster, hierarchical=False):
    if hierarchical:
        return hierarchical_allreduce(nbytes, cluster)
    return flat_allreduce(nbytes, cluster)


def negotiation_round(cluster):
    """Seconds for one negotiation round; nothing to negotiate alone."""
    p = cluster.ranks
    if p == 1:
        return 0.0
    slowest = cluster.inter if cluster.hosts > 1 else cluster.intra
    return 2 * (p - 1) * cluster.intra.alpha + 2 * slowest.alpha


def blocking_allreduce(nbytes, cluster, hierarchical=False):
    """One mpirep.allreduce call: a negotiation round and the collective."""
    return negotiation_round(cluster) + allreduce(nbytes, cluster, hierarchical)


def fused_buffers(tensor_bytes, fusion_threshold, solo_bytes):
    """The buffers (each a list of its tensors' sizes) fusion packs tensors of these sizes, in
    submission order, into."""
    if fusion_threshold <= 0 or solo_bytes <= 0:
        raise ValueError(f"fusion threshold and solo size must be positive, got {fusion_threshold}, "
                         f"{solo_bytes}")
    buffers, open_index = [], None
    for nbytes in tensor_bytes:
        _check_bytes(nbytes)
        if nbytes >= solo_bytes:
            buffers.append([nbytes])
        elif open_index is not None and sum(buffers[open_index]) + nbytes <= fusion_threshold:
            buffers[open_index].append(nbytes)
        else:
            buffers.append([nbytes])
            open_index = len(buffers) - 1
    if not buffers:
        raise ValueError("no tensors to reduce")
    return buffers


def gradient_round(tensor_bytes, cluster, fusion_threshold, chunk_bytes, hierarchical=False):
    """(seconds for all buffers, seconds for the last one): every buffer a round + a collective
    (+ packing and unpacking where it holds several tensors)."""
    times = []
    for tensors in fused_buffers(tensor_bytes, fusion_threshold, chunk_bytes * cluster.ranks):
        nbytes = sum(tensors)
        packing = 2 * nbytes * cluster.copy * cluster.oversubscription if len(tensors) > 1 else 0.0
        times.append(blocking_allreduce(nbytes, cluster, hierarchical) + packing)
    return sum(times), times[-1]


@dataclass(frozen=True)
class Step:
    seconds: float     # compute + exposed communication
    exposed: float     # communication not hidden behind the backward pass
    efficiency: float  # compute / seconds: the fraction of linear scaling reached


def training_step(compute, backward_fraction, tensor_bytes, cluster, fusion_threshold, chunk_bytes,
                  overlap=True, hierarchical=False):
    """tensor_bytes: the gradients' sizes in the order the backward pass produces them."""
    if compute <= 0 or not 0 <= backward_fraction <= 1:
        raise ValueError(f"need compute > 0 and 0 <= backward_fraction <= 1, got {compute}, "
                         f"{backward_fraction}")
    comm, last = gradient_round(tensor_bytes, cluster, fusion_threshold, chunk_bytes, hierarchical)
    exposed = max(comm - compute * backward_fraction, last) if overlap else comm
    step = compute + exposed
    return Step(seconds=step, exposed=exposed, efficiency=compute / step)
