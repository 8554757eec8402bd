"""How much of the gradient traffic a training step hides behind backprop, measured in one job:

    dev/cluster/hosts-up 2 && dev/cluster/shape 1gbit
    dev/cluster/mpirun-hosts -k 1 .venv/bin/python benchmarks/overlap.py --model cnn
    dev/cluster/mpirun-hosts -k 1 .venv/bin/python benchmarks/overlap.py --model resnet50

Three measures, each a block of --steps steps of Model.fit or of a tf.function, taking turns in
--rounds rounds so that load from other work hits them alike:

    alone  a step with the plain optimizer: no communication
    comm   the step's gradient set (tensors of the same shapes) averaged over the ranks on its
           own, in a tf.function, one allreduce per gradient as DistributedOptimizer issues them
    dist   a step with hvd.DistributedOptimizer, default settings

overlap = (alone + comm - dist) / min(alone, comm): 1 when the step costs no more than the
larger of the two, 0 when it costs their sum. Its medians are taken over the rounds' own
ratios, each from three blocks that ran back to back. A fourth measure, "forward", times the
forward pass and loss alone: the part of a step that no communication of that step can hide
behind, since gradients exist only after it. ``bound`` = (alone - forward) / min(alone, comm)
is the overlap a step would reach if every gradient's reduction hid behind the backprop that
follows it.

Models: "cnn", three convolutions, then Dense(1024) on a 4096-wide flatten (a 16 MiB gradient,
the first that backprop produces) and Dense(10); "resnet50", tf.keras.applications.ResNet50
(25.6 M parameters, 214 gradients) at a small image size and batch. Every rank has one intra-op
thread.
"""

import argparse
import json
import statistics
import time

import numpy as np
import tensorflow as tf
from mpi4py import MPI

import mpirep.tensorflow.keras as hvd


def cnn(image):
    inputs = tf.keras.Input((image, image, 3))
    x = tf.keras.layers.Conv2D(32, 3, padding="same", activation="relu")(inputs)
    x = tf.keras.layers.MaxPooling2D()(x)
    x = tf.keras.layers.Conv2D(64, 3, padding="same", activation="relu")(x)
    x = tf.keras.layers.MaxPooling2D()(x)
    x = tf.keras.layers.Conv2D(64, 3, padding="same", activation="relu")(x)
    x = tf.keras.layers.Flatten()(x)  # 8 x 8 x 64 = 4096 wide at 32 px
    x = tf.keras.layers.Dense(1024, activation="relu")(x)
    return tf.keras.Model(inputs, tf.keras.layers.Dense(10)(x))


def resnet50(image):
    return tf.keras.applications.ResNet50(weights=None, input_shape=(image, image, 3), classes=10,
                                          classifier_activation=None)  # logits, as the loss takes


MODELS = {"cnn": (cnn, 32, 32), "resnet50": (resnet50, 64, 8)}  # builder, image px, batch


def compiled(build, image, optimizer):
    tf.keras.utils.set_random_seed(1)
    model = build(image)
    model.compile(optimizer=optimizer,
                  loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model


def batch_of(image, batch, rank):
    rng = np.random.default_rng(rank)
    return (rng.random((batch, image, image, 3), dtype=np.float32),
            rng.integers(0, 10, batch))


def forward_and_gradients(model, loss_fn, x, y):
    """The forward pass and loss of `model` as a tf.function; its gradients for (x, y); and a
    tf.function that averages those through mpirep, one allreduce per gradient, as
    DistributedOptimizer issues them."""
    @tf.function
    def forward():
        return loss_fn(y, model(x, training=True))

    with tf.GradientTape() as tape:
        loss = loss_fn(y, model(x, training=True))
    grads = [tf.identity(g) for g in tape.gradient(loss, model.trainable_variables)]

    @tf.function
    def reduce_gradients():
        return [hvd.allreduce(g) for g in grads]
    return forward, grads, reduce_gradients


def idle_wait(comm):
    """A barrier that sleeps instead of spinning, so a waiting rank leaves its core alone."""
    request = comm.Ibarrier()
    while not request.Test():
        time.sleep(0.001)


def seconds_per_step(comm, step, steps):
    """The slowest rank's seconds per call over `steps` calls of step(). One untimed call
    comes first, between two meetings of the ranks, so that neither what the measure before
    left running (another runtime's threads, its last transfers) nor this one's first call
    after a pause is counted."""
    idle_wait(comm)
    step()
    idle_wait(comm)
    start = time.perf_counter()
    for _ in range(steps):
        step()
    return comm.allreduce(time.perf_counter() - start, op=MPI.MAX) / steps


def spread(values, digits):
    return f"{min(values):.{digits}f}-{max(values):.{digits}f}"


def parse_arguments(rounds):
    """The options of a benchmark that times blocks of steps of one of MODELS, in rounds;
    image_size and batch_size filled in from the model where not given."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", choices=sorted(MODELS), default="cnn")
    parser.add_argument("--image-size", type=int, help="pixels (default per model)")
    parser.add_argument("--batch-size", type=int, help="per rank (default per model)")
    parser.add_argument("--steps", type=int, default=5, help="steps per timed block")
    parser.add_argument("--rounds", type=int, default=rounds)
    parser.add_argument("--json", help="write the results to this file (rank 0)")
    args = parser.parse_args()
    _, image, batch = MODELS[args.model]
    args.image_size = args.image_size or image
    args.batch_size = args.batch_size or batch
    return args


def main():
    args = parse_arguments(rounds=7)
    tf.config.threading.set_intra_op_parallelism_threads(1)
    build, image, batch = MODELS[args.model][0], args.image_size, args.batch_size
    comm = MPI.COMM_WORLD.Dup()

    hvd.init()
    x, y = batch_of(image, batch, hvd.rank())
    data = tf.data.Dataset.from_tensors((x, y)).repeat().prefetch(2)
    plain = compiled(build, image, tf.keras.optimizers.SGD(0.001))
    dist = compiled(build, image, hvd.DistributedOptimizer(tf.keras.optimizers.SGD(0.001)))
    loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    forward, grads, reduce_gradients = forward_and_gradients(plain, loss_fn, x, y)

    def train_steps(model):
        """The step Model.fit runs, without fit's per-call set-up (callbacks, iterators),
        which would otherwise count in every block."""
        model.fit(data, steps_per_epoch=1, epochs=1, verbose=0)  # builds the optimizer
        step, batches = model.make_train_function(), iter(data)
        return lambda: step(batches)

    methods = {"alone": train_steps(plain), "comm": reduce_gradients, "dist": train_steps(dist),
               "forward": forward}
    for run in methods.values():  # trace and warm up
        for _ in range(2):
            run()
    per_step = {name: [] for name in methods}
    for _ in range(args.rounds):
        for name, run in methods.items():
            per_step[name].append(seconds_per_step(comm, run, args.steps))
    if hvd.rank() != 0:
        return
    ratios = [(a + c - d) / min(a, c)
              for a, c, d in zip(per_step["alone"], per_step["comm"], per_step["dist"])]
    bounds = [(a - f) / min(a, c)
              for a, c, f in zip(per_step["alone"], per_step["comm"], per_step["forward"])]
    params = sum(int(np.prod(v.shape)) for v in plain.trainable_variables)
    print(f"overlap, {args.model}: {len(grads)} gradients, {params * 4 / 2**20:.1f} MiB, "
          f"{image} px, batch {batch} per rank, {hvd.size()} ranks, 1 intra-op thread; "
          f"{args.rounds} rounds of {args.steps} steps per measure")
    print(f"{'measure':10}{'median ms/step':>16}{'min-max':>20}")
    for name, values in per_step.items():
        print(f"{name:10}{statistics.median(values) * 1e3:16.1f}"
              f"{spread([v * 1e3 for v in values], 1):>20}")
    print(f"overlap = (alone + comm - dist) / min(alone, comm): median "
          f"{statistics.median(ratios):.2f}, rounds {spread(ratios, 2)}")
    print(f"bound   = (alone - forward) / min(alone, comm):     median "
          f"{statistics.median(bounds):.2f}, rounds {spread(bounds, 2)}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"model": args.model, "gradients": len(grads), "mib": params * 4 / 2**20,
                       "image": image, "batch": batch, "np": hvd.size(), "rounds": args.rounds,
                       "steps": args.steps,
                       "ms_per_step": {n: statistics.median(v) * 1e3 for n, v in per_step.items()},
                       "overlap": {"median": statistics.median(ratios), "min": min(ratios), "max": max(ratios)},
                       "bound": statistics.median(bounds)}, f, indent=1)


if __name__ == "__main__":
    main()
