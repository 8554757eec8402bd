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
MIB = 1 << 20
CHUNK = MIB
# 100 MiB of gradients in 50 tensors of 2 MiB
GRADS = [2 * MIB] * 50


def cluster(hosts, per_host, cores=1 << 30):
    return ab.Cluster(hosts, per_host, INTRA, INTER, cores)


@pytest.mark.parametrize("hierarchical", [False, True])
def test_one_rank_costs_nothing(hierarchical):
    one = cluster(1, 1)
    assert ab.allreduce(64 * MIB, one, hierarchical) == 0.0
    assert ab.negotiation_round(one) == 0.0
    step = ab.training_step(0.1, 0.6, GRADS, one, 2 * MIB, CHUNK, overlap=False, hierarchical=hierarchical)
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
    fast_net = ab.Cluster(2, 2, INTRA, ab.Link(1e-6, 1e-11))
    assert ab.flat_allreduce(n, fast_net) == pytest.approx(6 * (3e-6 + n / 4 * 2e-10))
    assert ab.flat_allreduce(n, ab.Cluster(2, 1, INTRA, ab.Link(1e-6, 1e-11))) == pytest.approx(
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


def test_negotiation_round():
    assert ab.negotiation_round(cluster(1, 4)) == pytest.approx(6 * 3e-6 + 2 * 3e-6)
    assert ab.negotiation_round(cluster(4, 2)) == pytest.approx(14 * 3e-6 + 2 * 40e-6)


def test_fused_buffers_pack_in_order_like_the_fusion_planner():
    k = 1024
    # 3 + 4 KiB fit in 8; 5 opens a new buffer (the open one would pass 8), 2 joins it;
    # 64 KiB >= the solo size runs alone and leaves the open buffer open for the 1 KiB after it
    assert ab.fused_buffers([3 * k, 4 * k, 5 * k, 2 * k, 64 * k, k], 8 * k, 32 * k) == \
        [[3 * k, 4 * k], [5 * k, 2 * k, k], [64 * k]]
    # a tensor over the threshold but under the solo size gets a buffer that nothing joins
    assert ab.fused_buffers([k, 20 * k, k], 8 * k, 32 * k) == [[k], [20 * k], [k]]
    assert ab.fused_buffers([0], 8 * k, 32 * k) == [[0]]


def test_gradient_round_is_one_round_and_collective_per_buffer():
    c = cluster(2, 2)
    total, last = ab.gradient_round([MIB, MIB, MIB, MIB, MIB], c, 2 * MIB, CHUNK)
    one = lambda b: ab.negotiation_round(c) + ab.flat_allreduce(b, c)  # noqa: E731
    assert total == pytest.approx(2 * one(2 * MIB) + one(MIB))
    assert last == pytest.approx(one(MIB))


def test_a_fused_buffer_also_pays_two_copies_of_its_bytes():
    copying = ab.Cluster(1, 4, INTRA, INTER, cores_per_host=2, copy=1e-10)
    plain = ab.Cluster(1, 4, INTRA, INTER, cores_per_host=2)
    fused = ab.gradient_round([MIB, MIB], copying, 2 * MIB, CHUNK)[0]
    assert fused == pytest.approx(ab.gradient_round([MIB, MIB], plain, 2 * MIB, CHUNK)[0]
                                  + 2 * 2 * MIB * 1e-10 * 2)  # x2: 4 ranks on 2 cores
    alone = [8 * MIB]  # at least chunk x p: reduced in place, no copies
    assert ab.gradient_round(alone, copying, 2 * MIB, CHUNK)[0] == pytest.approx(
        ab.gradient_round(alone, plain, 2 * MIB, CHUNK)[0])


def test_training_step_without_overlap_adds_all_communication():
    c = cluster(4, 4)
    comm, _ = ab.gradient_round(GRADS, c, 4 * MIB, CHUNK)
    step = ab.training_step(0.25, 0.6, GRADS, c, 4 * MIB, CHUNK, overlap=False)
    assert step.seconds == pytest.approx(0.25 + comm)
    assert step.efficiency == pytest.approx(0.25 / (0.25 + comm))


def test_overlap_hides_communication_up_to_the_backward_time_but_not_the_last_buffer():
    c = cluster(4, 4)
    comm, last = ab.gradient_round(GRADS, c, 4 * MIB, CHUNK)
    assert comm > 0.01
    slow = ab.training_step(comm / 2, 1.0, GRADS, c, 4 * MIB, CHUNK)  # backward shorter than comm
    assert slow.exposed == pytest.approx(comm / 2)
    fast = ab.training_step(comm * 10, 0.5, GRADS, c, 4 * MIB, CHUNK)  # backward covers it all
    assert fast.exposed == pytest.approx(last)


@pytest.mark.parametrize("hosts,per_host", [(1, 1), (1, 4), (2, 2), (16, 8), (128, 4)])
@pytest.mark.parametrize("overlap", [False, True])
@pytest.mark.parametrize("hierarchical", [False, True])
def test_efficiency_is_at_most_one_and_overlap_never_hurts(hosts, per_host, overlap, hierarchical):
    c = cluster(hosts, per_host)
    args = (0.2, 0.6, GRADS, c, 2 * MIB, CHUNK)
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
        ab.training_step(0.1, 1.5, [10], cluster(1, 2), 2 * MIB, CHUNK)
