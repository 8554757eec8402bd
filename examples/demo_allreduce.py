"""Data-parallel training with mpirep's numpy API: softmax regression on synthetic data.

Each rank draws its own shard of a fixed dataset, computes the gradient on it, and averages the
gradients of every rank with one fused round of asynchronous allreduces. All ranks therefore
apply the same update and end with the same weights, which the demo checks at the end.

    mpirun -np 2 python examples/demo_allreduce.py
"""

import argparse
import hashlib

import numpy as np

import mpirep

FEATURES, CLASSES = 32, 4


def dataset(samples, seed=0):
    """Points around one centre per class; the same on every rank."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(scale=0.25, size=(CLASSES, FEATURES))
    labels = rng.integers(0, CLASSES, size=samples)
    points = centres[labels] + rng.normal(size=(samples, FEATURES))
    return points.astype(np.float32), labels


def loss_and_gradients(weights, bias, x, y):
    logits = x @ weights + bias
    logits -= logits.max(axis=1, keepdims=True)
    probabilities = np.exp(logits)
    probabilities /= probabilities.sum(axis=1, keepdims=True)
    loss = -np.log(probabilities[np.arange(len(y)), y] + 1e-12).mean()
    error = probabilities
    error[np.arange(len(y)), y] -= 1.0
    error /= len(y)
    return loss, x.T @ error, error.sum(axis=0)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--samples", type=int, default=8192)
    parser.add_argument("--learning-rate", type=float, default=0.2)
    args = parser.parse_args()

    mpirep.init()
    rank, size = mpirep.rank(), mpirep.size()
    x, y = dataset(args.samples)
    shard = slice(rank, None, size)  # disjoint shards that together cover the dataset
    x, y = x[shard], y[shard]

    weights = np.zeros((FEATURES, CLASSES), np.float32)
    bias = np.zeros(CLASSES, np.float32)
    for step in range(args.steps):
        loss, grad_w, grad_b = loss_and_gradients(weights, bias, x, y)
        handles = [
            mpirep.allreduce_async(grad_w.astype(np.float32), name="grad/weights"),
            mpirep.allreduce_async(grad_b.astype(np.float32), name="grad/bias"),
            mpirep.allreduce_async(np.float32(loss), name="loss"),
        ]
        grad_w, grad_b, mean_loss = (mpirep.synchronize(h) for h in handles)
        weights -= args.learning_rate * grad_w
        bias -= args.learning_rate * grad_b
        if rank == 0 and (step % 10 == 0 or step == args.steps - 1):
            print(f"step {step:3d}  loss {float(mean_loss):.4f}")

    accuracy = mpirep.allreduce(np.float64(((x @ weights + bias).argmax(axis=1) == y).mean()))
    digest = np.frombuffer(hashlib.sha256(weights.tobytes() + bias.tobytes()).digest(), np.uint8)
    digests = mpirep.allgather(digest[np.newaxis])
    identical = bool((digests == digests[0]).all())
    if rank == 0:
        print(f"{size} ranks: accuracy {float(accuracy):.3f}, weights identical on every rank: {identical}")
    mpirep.shutdown()
    if not identical:
        raise SystemExit("weights differ between ranks")


if __name__ == "__main__":
    main()
