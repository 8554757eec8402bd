"""ZeroRedundancyOptimizer's sharding plan (mpirep/tensorflow/_zero_plan.py), loaded from its
file so that TensorFlow is not imported."""

import importlib.util
from pathlib import Path

_PATH = Path(__file__).resolve().parents[2] / "mpirep" / "tensorflow" / "_zero_plan.py"
_spec = importlib.util.spec_from_file_location("zero_plan", _PATH)
zero_plan = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(zero_plan)


def test_largest_first_to_the_lightest_rank():
    # float32 sizes 10, 40, 30, 20, 5 at 2 ranks: 40 -> 0, 30 -> 1, 20 -> 1, 10 -> 0, 5 -> 0.
    plan = zero_plan.make_plan([10, 40, 30, 20, 5], ["float32"] * 5, [4] * 5, 2, 1)
    assert plan.owner == [0, 0, 1, 1, 0]
    assert plan.owned == [2, 3]
    assert plan.owned_bytes([4] * 5) == 200 and plan.owned_bytes([4] * 5, rank=0) == 220
    (exchange,) = plan.exchanges
    assert exchange.segments == [[0, 1, 4], [2, 3]] and exchange.block == 55


def test_balanced_by_bytes_and_one_exchange_per_dtype():
    # 100 float64 elements weigh as much as 200 float32 ones: the first two go to ranks 0 and
    # 1 (a tie goes to the lower index and the lower rank), the third to rank 0.
    sizes, dtypes, itemsizes = [100, 200, 50], ["float64", "float32", "float32"], [8, 4, 4]
    plan = zero_plan.make_plan(sizes, dtypes, itemsizes, 2, 0)
    assert plan.owner == [0, 1, 0]
    assert [(e.dtype, e.segments, e.block) for e in plan.exchanges] == [
        ("float32", [[2], [1]], 200), ("float64", [[0], []], 100)]


def test_more_ranks_than_variables_and_groups():
    plan = zero_plan.make_plan([3, 3], ["float32"] * 2, [4] * 2, 3, 2)
    assert plan.owner == [0, 1] and plan.owned == []
    groups = zero_plan.consecutive_groups(5, 2)
    assert groups == [[0, 1, 2], [3, 4]] and zero_plan.consecutive_groups(5, 0) == [[0, 1, 2, 3, 4]]
    plan = zero_plan.make_plan([8, 8, 8, 1, 1], ["float32"] * 5, [4] * 5, 2, 0, groups)
    assert plan.owner == [0, 1, 0, 1, 0]  # the second group: rank 1 holds fewer bytes overall
    assert [e.name for e in plan.exchanges] == ["zero.0.float32", "zero.1.float32"]
    assert [e.block for e in plan.exchanges] == [16, 1]
