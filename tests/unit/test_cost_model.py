"""The formulas of the cost model (benchmarks/cost_model/alpha_beta.py) in closed-form cases;
nothing here is timed."""
import math
import pathlib
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "benchmarks" / "cost_model"))
import alpha_beta as ab  # noqa: E402

INTRA = ab.Link(alpha=3e-6, beta=2e-10)
INTER = ab.Link(alpha=40e-6, beta=8e-9)
# a network faster than the hosts' memory
FAST_NET = ab.Link(1e-6, 1e-11)
SHM = ab.Link(alpha=1e-6, beta=1e-10)  # per wait, per byte of the buffer
KIB, MIB = 1 << 10, 1 << 20
SMALL = 64 * KIB
# 100 MiB of gradients in 50 tensors of 2 MiB
GRADS = [2 * MIB] * 50


def cluster(hosts, per_host, cores=1 << 30):
    return ab.Cluster(hosts, per_host, INTRA, INTER, cores)


def settings(fusion_threshold, small_allreduce_bytes=SMALL):
    return ab.Settings(fusion_threshold, small_allreduce_bytes)


def hop(link, nbytes):
    return link.alpha + nbytes * link.beta


@pytest.mark.parametrize("hierarchical", [False, True])
def test_one_rank_costs_nothing(hierarchical):
    one = cluster(1, 1)
    assert ab.allreduce(64 * MIB, one, hierarchical=hierarchical) == 0.0
    assert ab.allreduce(4 * KIB, one, hierarchical=hierarchical) == 0.0
    assert ab.cached_round(one) == 0.0 and ab.slow_round(one) == 0.0
    step = ab.training_step(0.1, 0.6, GRADS, one, settings(2 * MIB), overlap=False, hierarchical=hierarchical)
    assert step.efficiency == 1.0 and step.exposed == 0.0


def test_flat_ring_on_one_host_is_2_p_minus_1_steps_of_n_over_p():
    n = 12 * MIB
    assert ab.flat_allreduce(n, cluster(1, 3)) == pytest.approx(4 * (3e-6 + n / 3 * 2e-10))
    # 8 ranks on 4 cores take twice as long: the CPU work of the steps takes turns
    assert ab.flat_allreduce(n, cluster(1, 8, cores=4)) == pytest.approx(
        2 * 14 * (3e-6 + n / 8 * 2e-10))


def test_flat_ring_across_hosts_runs_at_its_slowest_hop():
    n = 8 * MIB
    assert ab.flat_allreduce(n, cluster(2, 2)) == pytest.approx(6 * (40e-6 + n / 4 * 8e-9))
    # a network faster than the hosts' memory: the hops within a host set the pace
    fast_net = ab.Cluster(2, 2, INTRA, FAST_NET)
    assert ab.flat_allreduce(n, fast_net) == pytest.approx(6 * (3e-6 + n / 4 * 2e-10))
    assert ab.flat_allreduce(n, ab.Cluster(2, 1, INTRA, FAST_NET)) == pytest.approx(
        2 * (1e-6 + n / 2 * 1e-11))


@pytest.mark.parametrize("hosts", [1, 2, 3, 64])
@pytest.mark.parametrize("nbytes", [0, 4096, 100 * MIB + 3])
def test_hierarchical_equals_flat_with_one_rank_per_host_or_one_host(hosts, nbytes):
    assert ab.hierarchical_allreduce(nbytes, cluster(hosts, 1)) == pytest.approx(
        ab.flat_allreduce(nbytes, cluster(hosts, 1)))
    assert ab.hierarchical_allreduce(nbytes, cluster(1, hosts)) == pytest.approx(
        ab.flat_allreduce(nbytes, cluster(1, hosts)))


def test_hierarchical_is_three_phases():
    n, hosts, k = 24 * MIB, 3, 4
    within = 2 * (k - 1) * (3e-6 + n / k * 2e-10)
    across = 2 * (hosts - 1) * (40e-6 + n / hosts * 8e-9)
    assert ab.hierarchical_allreduce(n, cluster(hosts, k)) == pytest.approx(within + across)


def test_hierarchical_pays_fewer_inter_host_latencies():
    # latency-bound (tiny message, many ranks): hierarchical wins; the bytes each host sends
    # are 2(hosts-1)/hosts n against 2(p-1)/p n, so it never loses on the wire either
    big = cluster(64, 8)
    assert ab.hierarchical_allreduce(4096, big) < ab.flat_allreduce(4096, big) / 5
    assert ab.hierarchical_allreduce(256 * MIB, big) < ab.flat_allreduce(256 * MIB, big)


@pytest.mark.parametrize("p,steps", [(2, 1), (3, 3), (4, 2), (5, 4), (7, 4), (8, 3), (9, 5), (16, 4)])
@pytest.mark.parametrize("nbytes", [0, 4 * KIB, 8 * MIB])
def test_doubling_on_one_host_is_log2_p2_exchanges_plus_hand_in_and_back(p, steps, nbytes):
    # p2 = the largest power of two <= p; log2(p2) exchanges of all n bytes, + 2 unless p == p2
    assert ab.doubling_allreduce(nbytes, cluster(1, p)) == pytest.approx(steps * hop(INTRA, nbytes))
    # oversubscribed: p ranks on 1 core take turns at every step
    assert ab.doubling_allreduce(nbytes, cluster(1, p, cores=1)) == pytest.approx(
        steps * hop(INTRA, nbytes) * p)


def test_doubling_steps_cross_hosts_where_the_partner_is_on_another_host():
    # 4 ranks per host: the exchanges with rank ^ 1 and ^ 2 stay in the host, ^ 4 and ^ 8 cross
    assert ab.doubling_steps(16, 4) == ((True, False),) * 2 + ((False, True),) * 2
    # one rank per host: every step crosses, hand-in and hand-back included
    assert ab.doubling_steps(3, 1) == ((False, True),) * 3
    # 2 hosts x 3: rank 4 -> 0 and 5 -> 1 cross; ^ 1 pairs 0-1 (host 0) and 2-3 (hosts 0, 1);
    # ^ 2 pairs 0-2 (host 0) and 1-3 (hosts 0, 1)
    assert ab.doubling_steps(6, 3) == ((False, True), (True, True), (True, True), (False, True))
    assert ab.doubling_steps(1, 1) == ()


def test_doubling_across_hosts_takes_the_slowest_hop_of_each_step():
    n = 16 * KIB
    assert ab.doubling_allreduce(n, cluster(4, 2)) == pytest.approx(hop(INTRA, n) + 2 * hop(INTER, n))
    assert ab.doubling_allreduce(n, cluster(3, 1)) == pytest.approx(3 * hop(INTER, n))
    # mixed steps (some pairs within a host, some across) go at the slower of the two hops
    assert ab.doubling_allreduce(n, cluster(2, 3)) == pytest.approx(4 * hop(INTER, n))
    fast_net = ab.Cluster(2, 3, INTRA, FAST_NET)
    assert ab.doubling_allreduce(n, fast_net) == pytest.approx(2 * hop(FAST_NET, n) + 2 * hop(INTRA, n))


@pytest.mark.parametrize("p", [3, 4, 5, 8])
def test_small_allreduces_go_by_doubling_from_three_ranks(p):
    c = cluster(1, p)
    assert ab.allreduce(SMALL, c, settings(2 * MIB)) == pytest.approx(ab.doubling_allreduce(SMALL, c))
    assert ab.allreduce(SMALL + 1, c, settings(2 * MIB)) == pytest.approx(ab.flat_allreduce(SMALL + 1, c))
    assert ab.allreduce(4 * KIB, c, settings(2 * MIB, small_allreduce_bytes=0)) == pytest.approx(
        ab.flat_allreduce(4 * KIB, c))
    # the hierarchical allreduce never switches to doubling
    assert ab.allreduce(4 * KIB, cluster(2, p), settings(2 * MIB), hierarchical=True) == pytest.approx(
        ab.hierarchical_allreduce(4 * KIB, cluster(2, p)))


def test_two_ranks_use_the_ring_even_for_small_allreduces():
    for c, link in ((cluster(1, 2), INTRA), (cluster(2, 1), INTER)):
        ring = 2 * hop(link, 2 * KIB)
        assert ab.allreduce(4 * KIB, c, settings(2 * MIB)) == pytest.approx(ring)
        # doubling would be one exchange of all 4 KiB: one alpha fewer
        assert ab.doubling_allreduce(4 * KIB, c) == pytest.approx(ring - link.alpha)


def test_cached_round_is_the_agreement_alone_one_alpha_per_doubling_step():
    assert ab.cached_round(cluster(1, 2)) == pytest.approx(3e-6)
    assert ab.cached_round(cluster(1, 4)) == pytest.approx(2 * 3e-6)
    assert ab.cached_round(cluster(1, 5)) == pytest.approx(4 * 3e-6)
    assert ab.cached_round(cluster(1, 4, cores=2)) == pytest.approx(2 * 3e-6 * 2)
    assert ab.cached_round(cluster(4, 2)) == pytest.approx(3e-6 + 2 * 40e-6)
    assert ab.cached_round(cluster(128, 4)) == pytest.approx(2 * 3e-6 + 7 * 40e-6)


def test_slow_round_adds_rank_0s_requests_and_responses_to_the_agreement():
    assert ab.slow_round(cluster(1, 4)) == pytest.approx(2 * 3e-6 + 6 * 3e-6 + 2 * 3e-6)
    assert ab.slow_round(cluster(4, 2)) == pytest.approx((3e-6 + 2 * 40e-6) + 14 * 3e-6 + 2 * 40e-6)
    assert ab.slow_round(cluster(2, 1)) == pytest.approx(40e-6 + 2 * 3e-6 + 2 * 40e-6)
    # at 512 ranks (128 hosts x 4) the slow phase costs 11 times the cached round here
    big = cluster(128, 4)
    assert ab.slow_round(big) - ab.cached_round(big) == pytest.approx(1022 * 3e-6 + 2 * 40e-6)


@pytest.mark.parametrize("hierarchical", [False, True])
def test_blocking_allreduce_is_a_round_and_the_collective(hierarchical):
    c, n = cluster(2, 2), 4 * KIB
    collective = ab.allreduce(n, c, settings(2 * MIB), hierarchical)
    assert ab.blocking_allreduce(n, c, cached=True, settings=settings(2 * MIB), hierarchical=hierarchical) \
        == pytest.approx(ab.cached_round(c) + collective)
    assert ab.blocking_allreduce(n, c, cached=False, settings=settings(2 * MIB), hierarchical=hierarchical) \
        == pytest.approx(ab.slow_round(c) + collective)


def test_fused_buffers_pack_in_order_like_the_fusion_planner():
    k = 1024
    # 3 + 4 KiB fit in 8; 5 opens a new buffer (the open one would pass 8), 2 joins it;
    # 64 KiB >= the solo size runs alone and leaves the open buffer open for the 1 KiB after it
    assert ab.fused_buffers([3 * k, 4 * k, 5 * k, 2 * k, 64 * k, k], 8 * k, 32 * k) == \
        [[3 * k, 4 * k], [5 * k, 2 * k, k], [64 * k]]
    # a tensor over the threshold but under the solo size gets a buffer that nothing joins
    assert ab.fused_buffers([k, 20 * k, k], 8 * k, 32 * k) == [[k], [20 * k], [k]]
    assert ab.fused_buffers([0], 8 * k, 32 * k) == [[0]]


@pytest.mark.parametrize("cached", [True, False])
def test_gradient_round_is_one_round_and_collective_per_buffer(cached):
    c = cluster(2, 2)  # tensors under the solo size, 64 KiB x 4 ranks; buffers past SMALL: the ring
    total, last = ab.gradient_round([200 * KIB] * 5, c, settings(400 * KIB), cached=cached)
    negotiation = ab.cached_round(c) if cached else ab.slow_round(c)
    one = lambda b: negotiation + ab.flat_allreduce(b, c)  # noqa: E731
    assert total == pytest.approx(2 * one(400 * KIB) + one(200 * KIB))
    assert last == pytest.approx(one(200 * KIB))


def test_a_tensor_runs_alone_from_small_allreduce_bytes_per_rank():
    c = cluster(1, 4)
    assert ab.Settings(small_allreduce_bytes=64 * KIB).solo_bytes(4) == 256 * KIB
    # 255 KiB joins the 1 KiB before it; 256 KiB runs alone, and the 1 KiB after it joins the
    # first one's buffer, still open
    joined = ab.gradient_round([KIB, 255 * KIB], c, settings(2 * MIB))[0]
    assert joined == pytest.approx(ab.cached_round(c) + ab.flat_allreduce(256 * KIB, c))
    apart = ab.gradient_round([KIB, 256 * KIB, KIB], c, settings(2 * MIB))[0]
    assert apart == pytest.approx(2 * ab.cached_round(c) + ab.flat_allreduce(256 * KIB, c)
                                  + ab.doubling_allreduce(2 * KIB, c))


def test_a_fused_buffer_goes_by_doubling_when_its_total_is_small():
    c = cluster(1, 4)
    total, last = ab.gradient_round([16 * KIB, 16 * KIB, 48 * KIB], c, settings(64 * KIB))
    # 32 KiB fused by doubling (2 exchanges), then 48 KiB alone (it would take the buffer past
    # 64 KiB), also by doubling
    assert total == pytest.approx(
        2 * ab.cached_round(c) + 2 * hop(INTRA, 32 * KIB) + 2 * hop(INTRA, 48 * KIB))
    assert last == pytest.approx(ab.cached_round(c) + 2 * hop(INTRA, 48 * KIB))
    # a fused total over small_allreduce_bytes takes the ring although each tensor is small
    total = ab.gradient_round([48 * KIB, 48 * KIB], c, settings(2 * MIB))[0]
    assert total == pytest.approx(ab.cached_round(c) + 6 * hop(INTRA, 24 * KIB))


def test_a_fused_buffer_also_pays_copies_of_its_bytes():
    copying = ab.Cluster(1, 4, INTRA, INTER, cores_per_host=2, copy=1e-10)
    plain = ab.Cluster(1, 4, INTRA, INTER, cores_per_host=2)
    fused = ab.gradient_round([100 * KIB, 100 * KIB], copying, settings(2 * MIB))[0]
    # on the ring: unpacked whole, packed only for the quarter each of 4 ranks sends first;
    # x2: 4 ranks on 2 cores
    assert fused == pytest.approx(ab.gradient_round([100 * KIB, 100 * KIB], plain, settings(2 * MIB))[0]
                                  + 1.25 * 200 * KIB * 1e-10 * 2)
    # by doubling (at most small_allreduce_bytes): packed and unpacked whole
    small = ab.gradient_round([10 * KIB, 10 * KIB], copying, settings(2 * MIB))[0]
    assert small == pytest.approx(ab.gradient_round([10 * KIB, 10 * KIB], plain, settings(2 * MIB))[0]
                                  + 2 * 20 * KIB * 1e-10 * 2)
    alone = [8 * MIB]  # at least small_allreduce_bytes x p: reduced in place, no copies
    assert ab.gradient_round(alone, copying, settings(2 * MIB))[0] == pytest.approx(
        ab.gradient_round(alone, plain, settings(2 * MIB))[0])


def shm_cluster(hosts, per_host, cores=1 << 30, copy=0.0):
    return ab.Cluster(hosts, per_host, INTRA, INTER, cores, copy, shm=SHM)


def test_shm_allreduce_waits_twice_per_block_and_moves_the_buffer_once():
    n = 3 * MIB + 5  # 4 blocks of 1 MiB
    for per_host in (2, 3, 8):
        assert ab.allreduce(n, shm_cluster(1, per_host)) == pytest.approx(8 * 1e-6 + n * 1e-10)
    # blocks of shm_slot_bytes; 8 ranks on 4 cores take twice as long
    assert ab.shm_allreduce(n, shm_cluster(1, 8, cores=4), ab.Settings(shm_slot_bytes=256 * KIB)) == \
        pytest.approx(2 * (26 * 1e-6 + n * 1e-10))
    assert ab.shm_allreduce(0, shm_cluster(1, 4)) == 0.0
    assert ab.shm_allreduce(n, shm_cluster(1, 1)) == 0.0
    with pytest.raises(ValueError, match="one host"):
        ab.shm_allreduce(n, shm_cluster(2, 2))
    with pytest.raises(ValueError, match="one host"):
        ab.shm_allreduce(n, cluster(1, 2))


@pytest.mark.parametrize("p", [2, 3, 4])
def test_one_host_with_shared_memory_runs_it_at_every_size_and_copies_nothing_more(p):
    c = shm_cluster(1, p, copy=1e-9)
    for n in (4 * KIB, SMALL, 8 * MIB):  # no switch to doubling for small buffers
        assert ab.allreduce(n, c, settings(2 * MIB)) == pytest.approx(ab.shm_allreduce(n, c))
    # a fused buffer is read where its tensors lie and written into their outputs
    fused = ab.gradient_round([100 * KIB, 100 * KIB], c, settings(2 * MIB))[0]
    assert fused == pytest.approx(ab.cached_round(c) + ab.shm_allreduce(200 * KIB, c))
    # across hosts the flat allreduce is the ring, shared memory or not
    assert ab.allreduce(8 * MIB, shm_cluster(2, p)) == pytest.approx(ab.flat_allreduce(8 * MIB, cluster(2, p)))


def test_hierarchical_stages_through_shared_memory_wait_three_times_per_block():
    n, hosts, k = 24 * MIB, 3, 4
    within = 3 * 24 * 1e-6 + n * 1e-10
    across = 2 * (hosts - 1) * (40e-6 + n / hosts * 8e-9)
    assert ab.hierarchical_allreduce(n, shm_cluster(hosts, k)) == pytest.approx(within + across)
    assert ab.allreduce(n, shm_cluster(hosts, k), hierarchical=True) == pytest.approx(within + across)
    # one rank per host: nothing to do inside it
    assert ab.hierarchical_allreduce(n, shm_cluster(hosts, 1)) == pytest.approx(
        ab.flat_allreduce(n, cluster(hosts, 1)))
    # the fused buffer is packed and unpacked, as on the ring's stages
    copying = shm_cluster(2, 4, copy=1e-9)
    fused = ab.gradient_round([100 * KIB, 100 * KIB], copying, settings(2 * MIB), hierarchical=True)[0]
    assert fused == pytest.approx(ab.cached_round(copying) + ab.hierarchical_allreduce(200 * KIB, copying)
                                  + 2 * 200 * KIB * 1e-9)


def test_training_step_without_overlap_adds_all_communication():
    c = cluster(4, 4)
    comm, _ = ab.gradient_round(GRADS, c, settings(4 * MIB))
    step = ab.training_step(0.25, 0.6, GRADS, c, settings(4 * MIB), overlap=False)
    assert step.seconds == pytest.approx(0.25 + comm)
    assert step.efficiency == pytest.approx(0.25 / (0.25 + comm))


def test_overlap_hides_communication_up_to_the_backward_time_but_not_the_last_buffer():
    c = cluster(4, 4)
    comm, last = ab.gradient_round(GRADS, c, settings(4 * MIB))
    assert comm > 0.01
    slow = ab.training_step(comm / 2, 1.0, GRADS, c, settings(4 * MIB))  # backward shorter than comm
    assert slow.exposed == pytest.approx(comm / 2)
    fast = ab.training_step(comm * 10, 0.5, GRADS, c, settings(4 * MIB))  # backward covers it all
    assert fast.exposed == pytest.approx(last)


@pytest.mark.parametrize("hosts,per_host", [(1, 1), (1, 4), (2, 2), (16, 8), (128, 4)])
@pytest.mark.parametrize("overlap", [False, True])
@pytest.mark.parametrize("hierarchical", [False, True])
def test_efficiency_is_at_most_one_and_overlap_never_hurts(hosts, per_host, overlap, hierarchical):
    c = cluster(hosts, per_host)
    args = (0.2, 0.6, GRADS, c, settings(2 * MIB))
    step = ab.training_step(*args, overlap=overlap, hierarchical=hierarchical)
    assert 0 < step.efficiency <= 1
    assert math.isclose(step.seconds, 0.2 + step.exposed)
    assert ab.training_step(*args, overlap=True, hierarchical=hierarchical).efficiency >= \
        ab.training_step(*args, overlap=False, hierarchical=hierarchical).efficiency


def test_bad_input_is_named():
    with pytest.raises(ValueError, match="per_host"):
        ab.Cluster(2, 0, INTRA, INTER)
    with pytest.raises(ValueError, match="-1 bytes"):
        ab.flat_allreduce(-1, cluster(1, 2))
    with pytest.raises(ValueError, match="fusion threshold"):
        ab.fused_buffers([10], 0, 10)
    with pytest.raises(ValueError, match="no tensors"):
        ab.fused_buffers([], 10, 10)
    with pytest.raises(ValueError, match="backward_fraction"):
        ab.training_step(0.1, 1.5, [10], cluster(1, 2), settings(2 * MIB))
    with pytest.raises(ValueError, match="-1 bytes"):
        ab.doubling_allreduce(-1, cluster(1, 3))


def test_step_bound_is_the_compute_or_the_forward_pass_then_the_wire():
    gbit = 1e9
    # one host: nothing crosses a wire
    assert ab.step_bound(0.3, 2 / 3, 100 * MIB, 1, gbit) == 0.3
    # 2 hosts: each interface carries the gradients once, 8 bits a byte, after the forward pass
    wire = 100 * MIB * 8 / gbit
    assert ab.step_bound(0.3, 2 / 3, 100 * MIB, 2, gbit) == pytest.approx(0.1 + wire)
    # many hosts: 2(h-1)/h of them; a fast wire leaves the compute as the bound
    assert ab.step_bound(0.3, 0.5, 100 * MIB, 64, gbit) == pytest.approx(0.15 + 2 * 63 / 64 * wire)
    assert ab.step_bound(0.3, 0.5, 100 * MIB, 64, 1000 * gbit) == 0.3
    with pytest.raises(ValueError, match="hosts >= 1"):
        ab.step_bound(0.3, 0.5, 100 * MIB, 0, gbit)
