"""grouped_allreduce with lists of different lengths raises on every rank instead of hanging."""
import numpy as np
import pytest

import mpirep


def test_group_length_mismatch_raises_everywhere():
    n, rank = mpirep.size(), mpirep.rank()
    if n == 1:
        pytest.skip("needs a second rank")
    tensors = [np.ones(3)] * (2 if rank == 0 else 3)
    with pytest.raises(mpirep.MismatchError, match=r"mismatched group sizes for tensor 'grp\.0': 2 on rank 0; 3 on rank"):
        mpirep.grouped_allreduce(tensors, op=mpirep.Sum, name="grp")
    # the group's first tensors failed together; the next collective works
    np.testing.assert_array_equal(mpirep.allreduce(np.full(2, rank), op=mpirep.Sum, name="grp.after"),
                                  np.full(2, n * (n - 1) // 2))


def test_group_length_mismatch_after_caching_raises_everywhere():
    """The group ran twice (from the response cache the second time) before the ranks disagree
    about its length (the error names whichever of the members both lists have rank 0 decided
    first, the same on every rank); then it works again at the common length."""
    n, rank = mpirep.size(), mpirep.rank()
    if n == 1:
        pytest.skip("needs a second rank")
    full = [np.full(2, rank + i, dtype=np.float64) for i in range(3)]
    expected = [np.full(2, n * (n - 1) // 2 + n * i) for i in range(3)]
    for _ in range(2):
        for got, want in zip(mpirep.grouped_allreduce(full, op=mpirep.Sum, name="cached_grp"), expected):
            np.testing.assert_array_equal(got, want)
    with pytest.raises(mpirep.MismatchError, match=r"mismatched group sizes for tensor 'cached_grp\.[01]': 2 on rank 0; 3 on rank"):
        mpirep.grouped_allreduce(full[:2] if rank == 0 else full, op=mpirep.Sum, name="cached_grp")
    for got, want in zip(mpirep.grouped_allreduce(full, op=mpirep.Sum, name="cached_grp"), expected):
        np.testing.assert_array_equal(got, want)
