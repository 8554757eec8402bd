"""A training step through mpirep and through TensorFlow's own MultiWorkerMirroredStrategy
(gRPC ring), for overlap.py's models, one rank per emulated host, measured in one job:

    dev/cluster/hosts-up 2 && dev/cluster/shape 1gbit
    dev/cluster/mpirun-hosts -k 1 .venv/bin/python benchmarks/step_vs_mwms.py --model cnn

Every measure is a block of --steps steps of a custom training loop in a tf.function (plain SGD),
taking turns with the others in --rounds rounds so that load hits them alike; each block starts
with one untimed step, so that it does not pay for the measure before it (overlap.py,
seconds_per_step):

    alone       the step with no communication
    forward     the forward pass and loss alone: what no gradient traffic can hide behind
    mwms        MultiWorkerMirroredStrategy, gradients averaged by one all_reduce call (its
                default: one pack)
    mwms_4mib   the same with packs of 4 MiB (CommunicationOptions(bytes_per_pack=4 MiB))
    mpirep_opt  mpirep through hvd.DistributedOptimizer
    mpirep_tape mpirep through hvd.DistributedGradientTape
    grads       the gradient set alone, averaged by mpirep in a tf.function (one allreduce per
                gradient, as the optimizer issues them)
    mpi         the gradient set's bytes in one MPI_Allreduce, in place
    link        every rank sends the gradient set's bytes to the next over a TCP connection of
                its own while receiving as many from the previous: the link's rate as TCP sees
                it, every link busy both ways

The wire bound of the gradient set is what an allreduce must send from each rank, 2(n-1)/n of
its bytes, at the link's rate. A step can be no faster than its computation alone, nor than
its forward pass followed by the wire bound (no gradient exists before the forward pass ends):
the step's bound is the larger of the two.

At the end every trained model's weights are compared across ranks: a path that did not
average its gradients leaves them different, and the run fails.
"""
import hashlib
import json
import os
import socket
import statistics
import subprocess
import sys
import threading

import numpy as np
import tensorflow as tf
from mpi4py import MPI

import mpirep.tensorflow.keras as hvd
from overlap import MODELS, batch_of, forward_and_gradients, parse_arguments, seconds_per_step, spread

PORT = 23456
FOUR_MIB = 4 << 20
STEPS = ("mwms", "mwms_4mib", "mpirep_opt", "mpirep_tape")  # whole training steps


def own_address():
    """This host's IPv4 address: the emulated host's, or loopback on one host."""
    shown = subprocess.run(["ip", "-4", "-o", "addr", "show", "scope", "global"],
                           capture_output=True, text=True).stdout.split()
    return shown[shown.index("inet") + 1].split("/")[0] if "inet" in shown else "127.0.0.1"


class RingOfSockets:
    """A TCP connection from every rank to the next: the link's rate as TCP sees it, without
    any MPI transport's protocol in between."""

    def __init__(self, comm):
        server = socket.create_server((own_address(), 0))
        peers = comm.allgather(server.getsockname())
        self.to_next = socket.create_connection(peers[(comm.rank + 1) % comm.size])
        self.from_previous, _ = server.accept()
        server.close()

    def exchange(self, payload, incoming):
        """Sends `payload` to the next rank while receiving as many bytes from the previous."""
        sender = threading.Thread(target=self.to_next.sendall, args=(payload,))
        sender.start()
        view, received = memoryview(incoming).cast("B"), 0
        while received < len(view):
            received += self.from_previous.recv_into(view[received:])
        sender.join()


def set_tf_config(comm):
    """TF_CONFIG for one worker per rank; ranks sharing an address get ports of their own."""
    addresses = comm.allgather(own_address())
    workers = [f"{address}:{PORT + rank}" for rank, address in enumerate(addresses)]
    os.environ["TF_CONFIG"] = json.dumps({"cluster": {"worker": workers},
                                          "task": {"type": "worker", "index": comm.rank}})


def weights_digest(model):
    digest = hashlib.sha256()
    for variable in model.trainable_variables:
        digest.update(variable.numpy().tobytes())
    return digest.hexdigest()


def ratio(value):
    return f"{value:.2f}" if value is not None else "-"


def main():
    args = parse_arguments(rounds=5)
    build = MODELS[args.model][0]
    comm = MPI.COMM_WORLD.Dup()
    set_tf_config(comm)
    sockets = RingOfSockets(comm)
    tf.config.threading.set_intra_op_parallelism_threads(1)
    # Before any other TensorFlow work: the strategy reads TF_CONFIG and starts this process's
    # gRPC server.
    strategy = tf.distribute.MultiWorkerMirroredStrategy()
    hvd.init()

    lr = 0.001
    x_np, y_np = batch_of(args.image_size, args.batch_size, comm.rank)
    x, y = tf.constant(x_np), tf.constant(y_np)
    loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    def built():
        tf.keras.utils.set_random_seed(1)
        return build(args.image_size)

    with strategy.scope():
        mwms_model = built()
    models = {name: built() for name in ("alone", "mpirep_opt", "mpirep_tape")}
    for model in models.values():
        hvd.broadcast_variables(model.variables, root_rank=0)
    sgd = {name: tf.keras.optimizers.SGD(lr) for name in models}
    sgd["mpirep_opt"] = hvd.DistributedOptimizer(sgd["mpirep_opt"])

    def local_step(name, distributed_tape=False):
        model, optimizer = models[name], sgd[name]

        @tf.function
        def step():
            with tf.GradientTape() as tape:
                loss = loss_fn(y, model(x, training=True))
            if distributed_tape:
                tape = hvd.DistributedGradientTape(tape)
            grads = tape.gradient(loss, model.trainable_variables)
            optimizer.apply_gradients(zip(grads, model.trainable_variables))
        return step

    def mwms_step(options):
        variables = [v.value for v in mwms_model.trainable_variables]

        def update(distribution, grads):
            for variable, grad in zip(variables, grads):
                distribution.extended.update(variable, lambda v, g: v.assign_sub(lr * g), args=(grad,),
                                             group=False)

        def replica_step():
            with tf.GradientTape() as tape:
                loss = loss_fn(y, mwms_model(x, training=True))
            grads = tape.gradient(loss, mwms_model.trainable_variables)
            grads = tf.distribute.get_replica_context().all_reduce(tf.distribute.ReduceOp.MEAN, grads,
                                                                   options=options)
            tf.distribute.get_replica_context().merge_call(update, args=(grads,))

        @tf.function
        def step():
            strategy.run(replica_step)
        return step

    forward, grads, reduce_gradients = forward_and_gradients(models["alone"], loss_fn, x, y)

    grad_bytes = sum(int(np.prod(g.shape)) * 4 for g in grads)
    flat = np.ones(grad_bytes // 4, np.float32)
    incoming = np.empty_like(flat)

    def mpi_allreduce():
        comm.Allreduce(MPI.IN_PLACE, flat)

    def exchange():
        sockets.exchange(flat, incoming)

    methods = {"alone": local_step("alone"), "forward": forward,
               "mwms": mwms_step(tf.distribute.experimental.CommunicationOptions()),
               "mwms_4mib": mwms_step(tf.distribute.experimental.CommunicationOptions(bytes_per_pack=FOUR_MIB)),
               "mpirep_opt": local_step("mpirep_opt"),
               "mpirep_tape": local_step("mpirep_tape", distributed_tape=True),
               "grads": reduce_gradients, "mpi": mpi_allreduce, "link": exchange}
    for run in methods.values():  # trace and warm up
        for _ in range(2):
            run()
    per_step = {name: [] for name in methods}
    for _ in range(args.rounds):
        for name, run in methods.items():
            per_step[name].append(seconds_per_step(comm, run, args.steps))

    trained = {"mwms": mwms_model, "mpirep_opt": models["mpirep_opt"], "mpirep_tape": models["mpirep_tape"]}
    digests = {name: comm.allgather(weights_digest(model))
               for name, model in trained.items()}
    differ = [name for name, seen in digests.items() if len(set(seen)) != 1]
    if comm.rank == 0:
        report(args, comm.size, grad_bytes, len(grads), per_step, differ)
    if differ:
        sys.exit(1)


def report(args, ranks, grad_bytes, gradients, per_step, differ):
    ms = {name: statistics.median(values) * 1e3 for name, values in per_step.items()}
    link_gbit = grad_bytes * 8 / (ms["link"] * 1e-3) / 1e9
    wire_ms = 2 * (ranks - 1) / ranks * ms["link"]
    bound_ms = max(ms["alone"], ms["forward"] + wire_ms)
    best_mwms = min(ms["mwms"], ms["mwms_4mib"])
    print(f"step vs MultiWorkerMirroredStrategy: {args.model}, {gradients} gradients, {grad_bytes / 2**20:.1f} MiB, "
          f"{args.image_size} px, batch {args.batch_size} per rank, {ranks} ranks (one per host); "
          f"{args.rounds} rounds of {args.steps} steps; link {link_gbit:.2f} Gbit/s measured")
    print(f"{'measure':12}{'median ms':>11}{'min-max':>15}{'/ best MWMS':>13}{'/ bound':>9}")
    for name, values in per_step.items():
        step = name in STEPS
        against_bound = ms[name] / bound_ms if step else ms[name] / wire_ms if name in ("grads", "mpi") else None
        print(f"{name:12}{ms[name]:11.1f}{spread([v * 1e3 for v in values], 1):>15}"
              f"{ratio(ms[name] / best_mwms if step else None):>13}{ratio(against_bound):>9}")
    print(f"wire bound of the gradient set {wire_ms:.1f} ms; "
          f"step bound (the larger of alone, and forward + wire) {bound_ms:.1f} ms")
    if differ:
        print(f"weights differ across ranks after training with: {', '.join(differ)}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"model": args.model, "ranks": ranks, "gradients": gradients, "mib": grad_bytes / 2**20,
                       "image": args.image_size, "batch": args.batch_size, "rounds": args.rounds,
                       "steps": args.steps, "link_gbit": link_gbit, "wire_ms": wire_ms, "bound_ms": bound_ms,
                       "ms": ms, "spread_ms": {n: [min(v) * 1e3, max(v) * 1e3] for n, v in per_step.items()},
                       "weights_differ": differ}, f, indent=1)


if __name__ == "__main__":
    main()
