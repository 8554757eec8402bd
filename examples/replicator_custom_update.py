"""An update rule written with the Replicator's collectives instead of a wrapped optimizer:
local SGD. Each replica takes a few SGD steps on its own data, then the replicas average their
weights with all_reduce; the chief alone decides when to lower the learning rate and broadcasts
its decision.

    mpirun -np 2 python examples/replicator_custom_update.py

Linear regression on generated data. Only the chief prints.
"""

import argparse

import numpy as np
import tensorflow as tf

from mpirep.replicator import Replicator

FEATURES = 16


def regression_data(samples, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(samples, FEATURES)).astype(np.float32)
    true_w = rng.normal(size=(FEATURES, 1)).astype(np.float32)
    y = x @ true_w + 0.5 + rng.normal(0.0, 0.1, size=(samples, 1)).astype(np.float32)
    return x, y


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--local-steps", type=int, default=8)
    parser.add_argument("--batch-size", type=int, default=32, help="global batch")
    args = parser.parse_args()

    repl = Replicator()
    x, y = regression_data(4096)

    def input_fn(context):
        batch = context.per_replica_batch_size(args.batch_size)
        dataset = tf.data.Dataset.from_tensor_slices((x, y)).repeat()
        return dataset.shard(context.num_replicas, context.replica_id).shuffle(
            1024, seed=context.replica_id).batch(batch)

    # Made outside context(), so every replica starts elsewhere until the first broadcast.
    w = tf.Variable(tf.random.normal([FEATURES, 1], seed=repl.replica_id))
    b = tf.Variable(0.0)

    @tf.function
    def start_from_chief():
        for v in (w, b):
            v.assign(repl.broadcast(v, root=0))

    @tf.function
    def local_step(batch, learning_rate):
        features, targets = batch
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(features @ w + b - targets))
        for v, grad in zip((w, b), tape.gradient(loss, (w, b))):
            v.assign_sub(learning_rate * grad)
        return loss

    @tf.function
    def average_weights():
        for v in (w, b):
            v.assign(repl.all_reduce(v, "mean"))

    def full_loss():
        return float(tf.reduce_mean(tf.square(x @ w + b - y)))

    repl.run(start_from_chief)
    learning_rate, best = 0.05, float("inf")
    for round_ in range(args.rounds):
        for _ in range(args.local_steps):
            repl.run(local_step, input_fn, args=(tf.constant(learning_rate),))
        repl.run(average_weights)
        loss = full_loss()  # the same on every replica: the weights are averaged
        # The chief's decision is the one every replica follows.
        if repl.is_chief and loss > best:
            learning_rate /= 2
        best = min(best, loss)
        learning_rate = float(repl.broadcast(tf.constant(learning_rate), root=0))
        if repl.is_chief and (round_ + 1) % 10 == 0:
            print(f"round {round_ + 1}: loss {loss:.4f} learning rate {learning_rate:.4f}")

    everyone = repl.gather(tf.reshape(tf.concat([tf.reshape(w, [-1]), [b]], 0), [1, -1]))
    agree = bool(tf.reduce_all(everyone == everyone[0]))
    if repl.is_chief:
        print(f"final loss {full_loss():.4f} on {repl.num_replicas} replicas; "
              f"weights identical on every replica: {agree}")
    repl.shutdown()


if __name__ == "__main__":
    main()
