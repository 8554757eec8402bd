"""The alpha-beta cost model of mpirep's allreduce and of a data-parallel training step.

A link costs `alpha` seconds per message plus `beta` seconds per byte. There are two: `intra`
between ranks of one host (messages through MPI's shared-memory transport) and `inter` between
hosts. A job has `hosts` hosts of `per_host` ranks each, p = hosts * per_host ranks, ranks
numbered host by host.

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

Recursive doubling of n bytes (native/core/doubling.h): with p2 the largest power of two not
above p, ranks p2..p-1 first hand their n bytes to ranks 0..p-p2-1 (the hand-in); ranks
0..p2-1 then exchange the whole n bytes with rank ^ 1, rank ^ 2, ..., rank ^ p2/2 and reduce
them; and the result goes back to ranks p2..p-1 (the hand-back). That is log2(p2) steps, plus
2 where p is not a power of two, each moving (and reducing) all n bytes, and each lasting as
long as its slowest pair: a step in which some pair sits on two hosts is an inter-host hop
(or the intra one x oversubscription if that is slower and the step also has pairs within a
host), a step whose pairs all share a host an intra-host hop:

    doubling(n) = sum over its steps of max(alpha + n beta of each kind of hop in the step)
    doubling(n) = (log2 p2 + 2 [p != p2]) (alpha_intra + n beta_intra) x oversubscription
                                                                                 one host

With k ranks per host, a power of two dividing p2, the exchanges with rank ^ m cross hosts
exactly where m >= k: log2(k) intra steps, log2(p2/k) inter steps.

Hierarchical allreduce: reduce-scatter within each host (k-1 steps of n/k bytes), then one ring
across the hosts per local index, on that index's n/k bytes (the k rings run at once and share
the interface, so together they move n/hosts bytes per step), then allgather within the host:

    hier(n) = 2 (k-1) (alpha_intra + (n/k) beta_intra) x oversubscription
            + 2 (hosts-1) (alpha_inter + (n/hosts) beta_inter)

The shared-memory collectives (native/core/shm_collectives.h), where shm_allreduce is on, have
costs of their own, `shm`: alpha per wait on the other ranks' flags and beta per byte of the
buffer. They go in blocks of shm_slot_bytes. An allreduce waits twice per block (until every
rank has copied its shares in, then until every rank has reduced its own). Per byte of the
buffer each rank moves about the same whatever k: it copies (k-1)/k in, reduces its 1/k share
from k operands, and copies the whole out. So beta is charged once per byte of the buffer:

    shm(n) = (2 ceil(n / slot) alpha_shm + n beta_shm) x oversubscription

The hierarchical allreduce's stages inside a host then run on it too: a reduce-scatter that
waits twice per block and an allgather that waits once. Between them they move what the
allreduce moves:

    hier(n) = (3 ceil(n / slot) alpha_shm + n beta_shm) x oversubscription
            + 2 (hosts-1) (alpha_inter + (n/hosts) beta_inter)

Which runs (native/core/executor.cc): hier(n) where the allreduce is hierarchical; otherwise
shm(n) where the ranks are all on one host and shm_allreduce is on; otherwise doubling(n) where
p >= 3 and n <= small_allreduce_bytes (a fused buffer counts by its total size), otherwise
flat(n). At p = 2 the ring runs whatever n is.

Oversubscription: the reduction and the copies are CPU work, and when a host runs more ranks
than it has cores they take turns: intra-host costs are multiplied by max(1, k / cores).

Negotiation (native/core/negotiator.h, native/runtime/runtime.cc). Every round begins with an
agreement: all ranks AND a few 64-bit words (native/core/agreement.h: three bits per response
cache entry, one per rank, four more words) by recursive doubling, the same steps as
doubling(n) above. Its message is a few hundred bytes, about a tenth of a microsecond at shared
memory's few GB/s, and is left out: each step costs the alpha of its slowest hop.

    cached(p) = doubling(0)

A tensor that every rank has run before under the same name and request is agreed by that
alone: a cached round. A new one (its first call, and every call of an unnamed tensor, which
gets a new name each time) also needs the round's slow phase: every rank sends rank 0 its
request list and rank 0 answers each. The messages travel at once, but rank 0 handles the
2 (p-1) of them one by one, each costing a message's software overhead (alpha_intra, which on
shared memory is nothing but that), and one round trip crosses the slowest link:

    slow(p) = cached(p) + 2 (p-1) alpha_intra + 2 alpha_slowest

The agreement's steps are charged the links' own alpha, not a parameter of their own. Each link
is fitted to one allreduce sweep, whose times are a constant (every per-message cost: the
ring's steps, the agreement's, rank 0's) plus a slope (bytes); an agreement alpha would be a
second constant, which the fit cannot tell from the link's alpha. The checks against the other
configurations (cached ResNet-50 rounds, doubling at 3 and 4 ranks) test that sharing.

A blocking allreduce is one round plus one collective. It runs its rounds on the calling
thread (docs/core.md, "Threads"), so there is no hand-off to a background thread to charge.

A set of gradients is reduced in fused buffers, packed as mpirep's fusion planner packs them
(native/core/fusion.cc): in order, each tensor joins the open buffer if the buffer stays
within the fusion threshold, else it opens a new one; a tensor of at least
small_allreduce_bytes x p runs alone. Each buffer costs a round and a collective, and a buffer of several tensors also
copies of its bytes at the host's memory-copy cost `copy` seconds per byte (x
oversubscription): one into the outputs (unpacking), and the packing, which the flat ring does
only for the segment it sends first (1/p of the bytes; it reads the rest where they lie) and
doubling and the hierarchical allreduce do for the whole buffer. The shared-memory allreduce
copies nothing more: it reads the tensors where they lie and writes straight into the outputs.
Training submits the same gradients every step, so a step's rounds are cached rounds; only the
first step's are slow.

A training step computes for `compute` seconds; the backward pass takes the last
`backward_fraction` of it and hands gradients over as it goes. Without overlap all
communication follows the compute. With overlap it runs during the backward pass, so only what
exceeds the backward time is exposed, and never less than the last buffer (the first layer's
gradients are ready only when the backward pass ends):

    exposed = comm                                              (no overlap)
    exposed = max(comm - backward, last buffer's time)          (overlap)
    step = compute + exposed,  efficiency = compute / step

The step's bound is what no allreduce can beat, whatever its software costs: every host's
interface must carry at least 2(hosts-1)/hosts of the gradients' bytes out (and as many in),
at 8/rate seconds per byte, and that can start only once the forward pass has produced a loss:

    wire = 2 (hosts-1)/hosts x gradient bytes x 8 / rate
    bound = max(compute, forward + wire),  forward = compute x (1 - backward_fraction)
"""
import functools
import math
from dataclasses import dataclass

from mpirep._settings_table import SETTINGS

_DEFAULTS = {s.name: s.default for s in SETTINGS}


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
    # the shared-memory collectives: alpha per wait, beta per byte of the buffer; None where a
    # host's ranks use the ring (shm_allreduce=0)
    shm: Link | None = None

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


@dataclass(frozen=True)
class Settings:
    """The mpirep settings the model depends on; mpirep's own defaults (settings.def) unless given."""
    fusion_threshold: int = _DEFAULTS["fusion_threshold"]
    small_allreduce_bytes: int = _DEFAULTS["small_allreduce_bytes"]
    shm_slot_bytes: int = _DEFAULTS["shm_slot_bytes"]

    def solo_bytes(self, ranks):
        """The size from which a tensor runs alone instead of packed (native/core/negotiator.h)."""
        return self.small_allreduce_bytes * ranks


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


@functools.lru_cache(maxsize=None)
def doubling_steps(ranks, per_host):
    """The steps of recursive doubling over `ranks` ranks numbered host by host, `per_host` to a
    host: for each, (whether some pair of it shares a host, whether some pair crosses hosts)."""
    p2 = 1 << (ranks.bit_length() - 1)
    exchanges = [[(r, r ^ mask) for r in range(p2)] for mask in (1 << i for i in range(p2.bit_length() - 1))]
    folded = [(p2 + i, i) for i in range(ranks - p2)]
    steps = [folded, *exchanges, folded] if folded else exchanges
    return tuple((any(a // per_host == b // per_host for a, b in pairs),
                  any(a // per_host != b // per_host for a, b in pairs)) for pairs in steps)


def doubling_allreduce(nbytes, cluster):
    """Seconds for recursive doubling over all ranks, without negotiation: every step moves the
    whole buffer, at the pace of its slowest pair."""
    _check_bytes(nbytes)
    total = 0.0
    for within, across in doubling_steps(cluster.ranks, cluster.per_host):
        hops = [cluster.intra.time(1, nbytes) * cluster.oversubscription] if within else []
        hops += [cluster.inter.time(1, nbytes)] if across else []
        total += max(hops)
    return total


def _shm_stages(nbytes, cluster, settings, waits_per_block):
    blocks = math.ceil(nbytes / settings.shm_slot_bytes)
    shm = cluster.shm
    return (waits_per_block * blocks * shm.alpha + nbytes * shm.beta) * cluster.oversubscription


def shm_allreduce(nbytes, cluster, settings=Settings()):
    """Seconds for the shared-memory allreduce of one host's ranks: two waits per block and the
    buffer's bytes."""
    _check_bytes(nbytes)
    if cluster.hosts != 1 or cluster.shm is None:
        raise ValueError("the shared-memory allreduce runs on one host that has it (Cluster.shm)")
    return _shm_stages(nbytes, cluster, settings, 2) if cluster.per_host > 1 else 0.0


def hierarchical_allreduce(nbytes, cluster, settings=Settings()):
    """Seconds for reduce-scatter in the host, rings across hosts, allgather in the host; the
    stages in the host through shared memory where the cluster has it."""
    _check_bytes(nbytes)
    k, hosts = cluster.per_host, cluster.hosts
    if k == 1:
        within = 0.0
    elif cluster.shm is not None:
        within = _shm_stages(nbytes, cluster, settings, 3)
    else:
        within = cluster.intra.time(2 * (k - 1), nbytes / k) * cluster.oversubscription
    across = cluster.inter.time(2 * (hosts - 1), nbytes / hosts) if hosts > 1 else 0.0
    return within + across


def _runs_shm_allreduce(cluster, hierarchical):
    return not hierarchical and cluster.hosts == 1 and cluster.per_host > 1 and cluster.shm is not None


def allreduce(nbytes, cluster, settings=Settings(), hierarchical=False):
    """Seconds for the collective the executor picks for a buffer of nbytes."""
    if hierarchical:
        return hierarchical_allreduce(nbytes, cluster, settings)
    if _runs_shm_allreduce(cluster, hierarchical):
        return shm_allreduce(nbytes, cluster, settings)
    if cluster.ranks >= 3 and nbytes <= settings.small_allreduce_bytes:
        return doubling_allreduce(nbytes, cluster)
    return flat_allreduce(nbytes, cluster)


def fused_copies(nbytes, cluster, settings=Settings(), hierarchical=False):
    """Copies of each byte of a buffer of several tensors: unpacking, and packing (whole, or
    the flat ring's first segment only); none for the shared-memory allreduce."""
    if _runs_shm_allreduce(cluster, hierarchical):
        return 0.0
    packs_whole = hierarchical or (cluster.ranks >= 3 and nbytes <= settings.small_allreduce_bytes)
    return 2.0 if packs_whole else 1.0 + 1.0 / cluster.ranks


def cached_round(cluster):
    """Seconds for a round that agrees on cached tensors: the AND of the agreement words."""
    return doubling_allreduce(0, cluster)


def slow_round(cluster):
    """Seconds for a round with new tensors: the agreement, then request lists to rank 0 and its
    answers."""
    p = cluster.ranks
    if p == 1:
        return 0.0
    slowest = cluster.inter if cluster.hosts > 1 else cluster.intra
    return cached_round(cluster) + 2 * (p - 1) * cluster.intra.alpha + 2 * slowest.alpha


def blocking_allreduce(nbytes, cluster, *, cached, settings=Settings(), hierarchical=False):
    """One mpirep.allreduce call: a round (cached: the tensor's name and request were agreed
    before) and the collective."""
    negotiation = cached_round(cluster) if cached else slow_round(cluster)
    return negotiation + allreduce(nbytes, cluster, settings, hierarchical)


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


def gradient_round(tensor_bytes, cluster, settings=Settings(), hierarchical=False, cached=True):
    """(seconds for all buffers, seconds for the last one): every buffer a round + a collective
    (+ its copies where it holds several tensors). cached: the steady state of
    training, which submits the same gradients every step; False for the first step."""
    times = []
    for tensors in fused_buffers(tensor_bytes, settings.fusion_threshold, settings.solo_bytes(cluster.ranks)):
        nbytes = sum(tensors)
        copying = (fused_copies(nbytes, cluster, settings, hierarchical) * nbytes * cluster.copy
                   * cluster.oversubscription if len(tensors) > 1 else 0.0)
        times.append(blocking_allreduce(nbytes, cluster, cached=cached, settings=settings,
                                        hierarchical=hierarchical) + copying)
    return sum(times), times[-1]


@dataclass(frozen=True)
class Step:
    seconds: float     # compute + exposed communication
    exposed: float     # communication not hidden behind the backward pass
    efficiency: float  # compute / seconds: the fraction of linear scaling reached


def training_step(compute, backward_fraction, tensor_bytes, cluster, settings=Settings(), overlap=True,
                  hierarchical=False):
    """A step after the first (its rounds cached). tensor_bytes: the gradients' sizes in the
    order the backward pass produces them."""
    if compute <= 0 or not 0 <= backward_fraction <= 1:
        raise ValueError(f"need compute > 0 and 0 <= backward_fraction <= 1, got {compute}, "
                         f"{backward_fraction}")
    comm, last = gradient_round(tensor_bytes, cluster, settings, hierarchical)
    exposed = max(comm - compute * backward_fraction, last) if overlap else comm
    step = compute + exposed
    return Step(seconds=step, exposed=exposed, efficiency=compute / step)


def step_bound(compute, backward_fraction, gradient_bytes, hosts, rate):
    """The least a step can take over hosts joined at `rate` bits per second (see the top)."""
    if compute <= 0 or not 0 <= backward_fraction <= 1 or hosts < 1 or rate <= 0:
        raise ValueError(f"need compute > 0, 0 <= backward_fraction <= 1, hosts >= 1 and rate > 0, "
                         f"got {compute}, {backward_fraction}, {hosts}, {rate}")
    wire = 2 * (hosts - 1) / hosts * gradient_bytes * 8 / rate
    return max(compute, compute * (1 - backward_fraction) + wire)
