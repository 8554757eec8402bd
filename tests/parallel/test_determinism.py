"""Determinism: 1,000 training steps of a tiny model with averaged gradients leave the weights
bit-identical on every rank (each element is reduced and scaled in one place, then shared)."""
import numpy as np

import mpirep
from ranks import assert_identical_across_ranks


def test_weights_identical_after_1000_steps():
    rank, n = mpirep.rank(), mpirep.size()
    rng = np.random.default_rng(rank)  # each rank's own data
    x = rng.normal(size=(64, 8)).astype(np.float32)
    y = (x @ np.arange(8, dtype=np.float32) + rng.normal(scale=0.1, size=64)).astype(np.float32)
    weights = np.zeros(8, np.float32)
    bias = np.zeros(1, np.float32)
    for step in range(1000):
        error = x @ weights + bias - y
        grad_w = (x.T @ error / len(y)).astype(np.float32)
        grad_b = np.array([error.mean()], np.float32)
        handles = [mpirep.allreduce_async(grad_w, name=f"det.w.{step}"),
                   mpirep.allreduce_async(grad_b, name=f"det.b.{step}")]
        grad_w, grad_b = (mpirep.synchronize(h) for h in handles)
        weights -= np.float32(0.05) * grad_w
        bias -= np.float32(0.05) * grad_b
    assert np.abs(weights - np.arange(8)).max() < 0.1, weights  # it learned the true weights
    assert_identical_across_ranks([weights, bias])
