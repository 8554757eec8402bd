"""Data and the closed-form result of full-batch SGD on a linear model with a mean squared
error, shared by the scripts: rank r's samples depend on r and on their index, and averaging
the ranks' gradients is the gradient over all ranks' samples, since each rank has as many."""
import numpy as np

FEATURES, SAMPLES_PER_RANK = 3, 8
TRUE_WEIGHTS = np.array([0.5, -1.0, 2.0])


def rank_data(rank):
    index = np.arange(SAMPLES_PER_RANK * FEATURES, dtype=np.float64).reshape(SAMPLES_PER_RANK, FEATURES)
    x = np.sin(index + 7.0 * rank)
    y = x @ TRUE_WEIGHTS + 0.25 * rank
    return x.astype(np.float32), y[:, None].astype(np.float32)


def sgd_reference(size, learning_rates):
    """Kernel and bias after SGD steps from zeros at these learning rates, on every rank's data
    at once."""
    parts = [rank_data(r) for r in range(size)]
    x = np.concatenate([p[0] for p in parts]).astype(np.float64)
    y = np.concatenate([p[1] for p in parts]).astype(np.float64)
    kernel, bias = np.zeros((FEATURES, 1)), np.zeros(1)
    for learning_rate in learning_rates:
        error = x @ kernel + bias - y
        kernel -= learning_rate * 2.0 * x.T @ error / len(x)
        bias -= learning_rate * 2.0 * error.mean(axis=0)
    return kernel, bias
