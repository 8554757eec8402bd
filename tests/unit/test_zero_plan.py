"""ZeroRedundancyOptimizer's sharding plan (mpirep/tensorflow/_zero_plan.py), loaded from its
file so that TensorFlow is not imported."""

import importlib.util
from pathlib import Path

_PATH = Path(__file__).resolve().parents[2] / "mpirep" / "tensorflow" / "_zero_plan.py"
_spec = importlib.util.spec_from_file_location("zero_plan", _PATH)
zero_plan = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(zero_plan)
Piece = zero_plan.Piece


def whole(*indices, sizes):
    return [Piece(i, 0, sizes[i]) for i in indices]


def test_whole_variables_largest_first_to_the_lightest_rank():
    # float32 sizes 10, 40, 30, 20, 5 at 2 ranks: 40 -> 0, 30 -> 1, 20 -> 1, 10 -> 0, 5 -> 0.
    sizes = [10, 40, 30, 20, 5]
    plan = zero_plan.make_plan(sizes, ["float32"] * 5, [4] * 5, 2, 1)
    assert plan.owned == whole(2, 3, sizes=sizes)
    assert plan.owned_bytes([4] * 5) == 200 and plan.owned_bytes([4] * 5, rank=0) == 220
    (exchange,) = plan.exchanges
    assert exchange.segments == [whole(0, 1, 4, sizes=sizes), whole(2, 3, sizes=sizes)]
    assert exchange.block == 55
    # In the allgather's output rank 0's variables come first, then rank 1's.
    assert exchange.variable_ranges() == [(0, 0), (1, 10), (4, 50), (2, 55), (3, 85)]


def test_whole_variables_balanced_by_bytes_and_one_exchange_per_dtype():
    # 100 float64 elements weigh as much as 200 float32 ones: the first two go to ranks 0 and
    # 1 (a tie goes to the lower index and the lower rank), the third to rank 0.
    sizes, dtypes, itemsizes = [100, 200, 50], ["float64", "float32", "float32"], [8, 4, 4]
    plan = zero_plan.make_plan(sizes, dtypes, itemsizes, 2, 0)
    assert [(e.dtype, e.segments, e.block) for e in plan.exchanges] == [
        ("float32", [whole(2, sizes=sizes), whole(1, sizes=sizes)], 200),
        ("float64", [whole(0, sizes=sizes), []], 100)]
    # In the variables' order, whatever the exchanges' order.
    assert plan.owned == whole(0, 2, sizes=sizes)


def test_more_ranks_than_variables_and_groups():
    plan = zero_plan.make_plan([3, 3], ["float32"] * 2, [4] * 2, 3, 2)
    assert plan.owned == [] and plan.exchanges[0].segments[:2] == [[Piece(0, 0, 3)], [Piece(1, 0, 3)]]
    groups = zero_plan.consecutive_groups(5, 2)
    assert groups == [[0, 1, 2], [3, 4]] and zero_plan.consecutive_groups(5, 0) == [[0, 1, 2, 3, 4]]
    sizes = [8, 8, 8, 1, 1]
    plan = zero_plan.make_plan(sizes, ["float32"] * 5, [4] * 5, 2, 0, groups)
    # The second group: rank 1 holds fewer bytes overall, so it takes the first of the two.
    assert [e.segments for e in plan.exchanges] == [
        [whole(0, 2, sizes=sizes), whole(1, sizes=sizes)],
        [whole(4, sizes=sizes), whole(3, sizes=sizes)]]
    assert [e.name for e in plan.exchanges] == ["zero.0.float32", "zero.1.float32"]
    assert [e.block for e in plan.exchanges] == [16, 1]


def test_slices_cut_equal_ranges_across_variables():
    # 5 + 12 + 3 = 20 elements at 3 ranks: blocks of 7, the last rank's 6 padded to 7.
    plan = zero_plan.make_plan([5, 12, 3], ["float32"] * 3, [4] * 3, 3, 1, sliced=True)
    (exchange,) = plan.exchanges
    assert exchange.block == 7
    assert exchange.segments == [[Piece(0, 0, 5), Piece(1, 0, 2)],
                                 [Piece(1, 2, 9)],
                                 [Piece(1, 9, 12), Piece(2, 0, 3)]]
    assert plan.owned == [Piece(1, 2, 9)] and not plan.is_whole(Piece(1, 2, 9))
    assert [exchange.length(r) for r in range(3)] == [7, 7, 6]
    # A variable cut across ranks is still one range of the allgather's output, and one run
    # of the reducescatter's buffer, which ends with the last rank's padding.
    assert exchange.variable_ranges() == [(0, 0), (1, 5), (2, 17)]
    assert exchange.buffer_parts(padded=True) == [Piece(0, 0, 5), Piece(1, 0, 12),
                                                  Piece(2, 0, 3), 1]
    assert sum(plan.owned_bytes([4] * 3, rank=r) for r in range(3)) == 80


def test_slices_of_empty_variables_and_more_ranks_than_elements():
    plan = zero_plan.make_plan([0, 2, 0], ["float32"] * 3, [4] * 3, 4, 0, sliced=True)
    (exchange,) = plan.exchanges
    # Every variable is owned, so that its slots are someone's: an empty one by the rank whose
    # range it starts in. Rank 3 gets nothing.
    assert exchange.segments == [[Piece(0, 0, 0), Piece(1, 0, 1)], [Piece(1, 1, 2)],
                                 [Piece(2, 0, 0)], []]
    assert exchange.block == 1 and plan.is_whole(Piece(0, 0, 0))


def test_backprop_buckets_start_from_the_last_variables():
    # Byte sizes 100, 10, 10, 50, 30 with buckets of at least 40 bytes: 30 + 50, then
    # 10 + 10 + 100; the first variables' bucket takes what is left.
    assert zero_plan.backprop_buckets([100, 10, 10, 50, 30], 40) == [[3, 4], [0, 1, 2]]
    assert zero_plan.backprop_buckets([5, 100, 10], 40) == [[1, 2], [0]]
    assert zero_plan.backprop_buckets([], 40) == []
