"""A CNN classifier trained with mpirep's Replicator on generated images.

    mpirun -np 2 python examples/replicator_classifier.py

Each image is noise plus a bright square in the quadrant given by its class. The same script
runs at one process or many; only the chief prints and writes the checkpoint.
"""

import argparse
import os
import tempfile

import numpy as np
import tensorflow as tf

from mpirep.replicator import Replicator

keras = tf.keras
CLASSES, SIZE = 4, 16


def images(samples, seed=0):
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, CLASSES, samples)
    x = rng.normal(0.0, 0.5, size=(samples, SIZE, SIZE, 1)).astype(np.float32)
    half = SIZE // 2
    for i, label in enumerate(labels):
        row, col = divmod(int(label), 2)
        x[i, row * half + 2:row * half + 6, col * half + 2:col * half + 6] += 1.0
    return tf.data.Dataset.from_tensor_slices((x, labels.astype(np.int32)))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--samples", type=int, default=2048)
    parser.add_argument("--batch-size", type=int, default=64, help="global batch")
    parser.add_argument("--checkpoint-dir", default=None)
    args = parser.parse_args()

    repl = Replicator()
    with repl.context():
        model = keras.Sequential([
            keras.Input((SIZE, SIZE, 1)),
            keras.layers.Conv2D(8, 3, activation="relu"),
            keras.layers.MaxPooling2D(),
            keras.layers.Conv2D(16, 3, activation="relu"),
            keras.layers.GlobalAveragePooling2D(),
            keras.layers.Dense(CLASSES),
        ])
        optimizer = repl.wrap_optimizer(keras.optimizers.Adam(0.01))

    # The same seed everywhere: replicas must agree on the order before it is sharded.
    dataset = images(args.samples).shuffle(args.samples, seed=1)
    batches = repl.distribute_dataset(dataset, args.batch_size)

    @tf.function
    def step(x, y):
        with tf.GradientTape() as tape:
            logits = model(x, training=True)
            loss = tf.reduce_mean(keras.losses.sparse_categorical_crossentropy(
                y, logits, from_logits=True))
        optimizer.apply_gradients(zip(tape.gradient(loss, model.trainable_variables),
                                      model.trainable_variables))
        correct = tf.reduce_sum(tf.cast(tf.argmax(logits, 1, output_type=tf.int32) == y,
                                        tf.float32))
        return loss, correct

    for epoch in range(args.epochs):
        losses, correct, seen = [], 0.0, 0
        for x, y in batches:
            loss, hits = repl.run(step, args=(x, y))
            losses.append(loss)
            correct += float(hits)
            seen += int(x.shape[0])
        loss = float(repl.reduce("mean", tf.reduce_mean(losses)))
        accuracy = float(repl.reduce("sum", correct)) / float(repl.reduce("sum", float(seen)))
        if repl.is_chief:
            print(f"epoch {epoch + 1}: loss {loss:.4f} accuracy {accuracy:.3f}")

    checkpoint_dir = args.checkpoint_dir or (tempfile.mkdtemp(prefix="replicator_classifier")
                                             if repl.is_chief else "")  # the chief writes
    path = repl.save(tf.train.Checkpoint(model=model, optimizer=optimizer),
                     os.path.join(checkpoint_dir, "ckpt"))
    if repl.is_chief:
        print(f"final loss {loss:.4f} accuracy {accuracy:.3f} on {repl.num_replicas} replicas; "
              f"checkpoint {path}")
    repl.shutdown()


if __name__ == "__main__":
    main()
