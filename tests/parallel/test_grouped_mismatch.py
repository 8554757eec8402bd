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
