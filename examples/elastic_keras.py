"""Elastic Keras training: hosts may be lost or added while the model trains, and training goes
on from the last commit (docs/elastic.md).  A Horovod elastic script with its import changed.

    mpirep-run -np 4 --min-np 2 -H node1:2,node2:2 python examples/elastic_keras.py
    mpirep-run --min-np 2 --host-discovery-script ./discover.sh python examples/elastic_keras.py
    salloc -N 2 --ntasks-per-node=2 --no-kill mpirep-run --min-np 2 python examples/elastic_keras.py

The data is keras_mnist.py's generated MNIST-like set.  Each generation of ranks takes its
shard for the number of ranks it has, and starts the current epoch at the batch the last
commit reached.
"""

import argparse

import tensorflow as tf

import mpirep.tensorflow.keras as hvd
from keras_mnist import build_model, mnist_like


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--samples", type=int, default=6000)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--batches-per-commit", type=int, default=10)
    args = parser.parse_args()

    hvd.init()
    images, labels = mnist_like(args.samples)
    model = build_model()
    base_rate = 0.001
    optimizer = hvd.DistributedOptimizer(tf.keras.optimizers.Adam(base_rate * hvd.size()))
    model.compile(optimizer=optimizer, metrics=["accuracy"],
                  loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))

    # What a commit keeps: the weights, the optimizer's state, and where training stands.
    state = hvd.elastic.KerasState(model, epoch=0, batch=0)

    def on_state_reset():
        # The set of ranks changed: the learning rate follows the effective batch size.
        optimizer.learning_rate.assign(base_rate * hvd.size())

    state.register_reset_callbacks([on_state_reset])
    callbacks = [
        hvd.callbacks.MetricAverageCallback(),
        hvd.elastic.UpdateEpochStateCallback(state),
        hvd.elastic.UpdateBatchStateCallback(state),
        hvd.elastic.CommitStateCallback(state, batches_per_commit=args.batches_per_commit),
    ]

    @hvd.elastic.run
    def train(state):
        rank, size = hvd.rank(), hvd.size()
        steps = args.samples // (args.batch_size * size)
        shard = tf.data.Dataset.from_tensor_slices((images[rank::size], labels[rank::size]))
        batches = shard.batch(args.batch_size).repeat().skip(state.batch)
        model.fit(batches, steps_per_epoch=steps, epochs=args.epochs - state.epoch,
                  callbacks=callbacks, shuffle=False, verbose=2 if rank == 0 else 0)

    train(state)
    if hvd.rank() == 0:
        print(f"final epoch {state.epoch} on {hvd.size()} ranks")


if __name__ == "__main__":
    main()
