"""Keras Model.fit throughput of the small ResNet-style CNN of tf_keras_cnn.py (or of
MobileNetV2 at 64 px, --model mobilenetv2), with every comparison measured in one job, in
alternating blocks, so that load from other jobs on a shared host hits all methods alike.

    mpirun -np 1 python benchmarks/tf_training_overhead.py    # overhead against plain TF
    mpirun -np 2 python benchmarks/tf_training_overhead.py    # scaling, and cycle times
    mpirun -np 1 python benchmarks/tf_training_overhead.py --model mobilenetv2 --cycle-times 0

Methods: "alone": rank 0 trains with a plain Keras optimizer (no mpirep in the step) while any
other ranks wait without using a core; "all ranks, no mpirep": every rank trains so, without
communicating (what the host's cores allow N ranks); "mpirep, cycle C ms": every rank trains with
DistributedOptimizer, mpirep started with cycle_time_ms=C (restarted between blocks when several
cycle times are measured). With --xla (the default), "alone, XLA", "all ranks, no mpirep, XLA"
and "mpirep, XLA, cycle C ms" are the same compiled with jit_compile=True, mpirep's allreduce
then one custom call per step (docs/tensorflow.md, "XLA and GPU nodes"). Each process uses one
intra-op thread. Reported:
images/sec per rank (median over blocks), and the median over rounds of each round's ratio to
"alone" ("alone, XLA" for the XLA methods), with its quartiles: at np=1 the overhead (mpirep vs
alone), at more ranks the scaling efficiency, total rate / (ranks * rate alone).
"""

import argparse
import json
import statistics
import time

import tensorflow as tf
from mpi4py import MPI

import mpirep
import mpirep.tensorflow.keras as hvd
from tf_keras_cnn import small_resnet, synthetic_data


def mobilenet_v2():
    return tf.keras.applications.MobileNetV2(weights=None, input_shape=(64, 64, 3), classes=10)


MODELS = {"small_resnet": (small_resnet, 32), "mobilenetv2": (mobilenet_v2, 64)}  # image px


def compiled(build, optimizer, jit_compile=False):
    tf.keras.utils.set_random_seed(1)
    model = build()
    model.compile(optimizer=optimizer, jit_compile=jit_compile,
                  loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model


def idle_wait(comm):
    """Waits for the others at a barrier, sleeping instead of spinning on a core."""
    request = comm.Ibarrier()
    while not request.Test():
        time.sleep(0.002)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", choices=sorted(MODELS), default="small_resnet")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--steps", type=int, default=20, help="steps per timed block")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--cycle-times", default="0,2", help="ms, comma-separated")
    parser.add_argument("--xla", action=argparse.BooleanOptionalAction, default=True,
                        help="also the same steps compiled with jit_compile=True")
    parser.add_argument("--json", help="write the results to this file (rank 0)")
    args = parser.parse_args()
    tf.config.threading.set_intra_op_parallelism_threads(1)
    comm = MPI.COMM_WORLD.Dup()
    rank, size = comm.Get_rank(), comm.Get_size()
    cycles = [float(c) for c in args.cycle_times.split(",")]

    hvd.init()  # also loads the XLA kernels, before the first XLA compilation
    build, image = MODELS[args.model]
    data = synthetic_data(args.batch_size, rank, image)
    plain = compiled(build, tf.keras.optimizers.SGD(0.01))
    distributed = compiled(build, hvd.DistributedOptimizer(tf.keras.optimizers.SGD(0.01)))
    if args.xla:
        plain_xla = compiled(build, tf.keras.optimizers.SGD(0.01), jit_compile=True)
        distributed_xla = compiled(build, hvd.DistributedOptimizer(tf.keras.optimizers.SGD(0.01)),
                                   jit_compile=True)

    def fit(model, steps):
        model.fit(data, steps_per_epoch=steps, epochs=1, verbose=0)

    def alone(model):
        def run(steps):
            if rank == 0:
                fit(model, steps)
            comm.Barrier() if size == 1 else idle_wait(comm)
        return run

    current_cycle = None

    def restart(cycle):
        """Restarts mpirep with another cycle time; with one cycle time it starts once, as a
        training job does, so that no block pays for a restart."""
        nonlocal current_cycle
        if cycle is not None and cycle != current_cycle:
            mpirep.shutdown()
            mpirep.init(cycle_time_ms=cycle)
            current_cycle = cycle

    methods = {"alone": (None, alone(plain))}
    if size > 1:  # what the host gives N ranks that do not communicate: the ceiling
        methods["all ranks, no mpirep"] = (None, lambda steps: fit(plain, steps))
    for cycle in cycles:
        methods[f"mpirep, cycle {cycle:g} ms"] = (cycle, lambda steps: fit(distributed, steps))
    if args.xla:
        methods["alone, XLA"] = (None, alone(plain_xla))
        if size > 1:
            methods["all ranks, no mpirep, XLA"] = (None, lambda steps: fit(plain_xla, steps))
        for cycle in cycles:
            methods[f"mpirep, XLA, cycle {cycle:g} ms"] = (
                cycle, lambda steps: fit(distributed_xla, steps))
    for cycle, run in methods.values():  # trace and warm up
        restart(cycle)
        run(3)
    seconds = {name: [] for name in methods}
    for _ in range(args.rounds):
        for name, (cycle, run) in methods.items():
            restart(cycle)
            comm.Barrier()
            start = time.perf_counter()
            run(args.steps)
            seconds[name].append(comm.allreduce(time.perf_counter() - start, op=MPI.MAX))
    if rank == 0:
        images = args.batch_size * args.steps
        rates = {name: images / statistics.median(s) for name, s in seconds.items()}
        print(f"Keras Model.fit, {args.model}, batch {args.batch_size} per rank, {size} rank(s), "
              f"1 intra-op thread each; median of {args.rounds} blocks of {args.steps} steps")
        # Per-rank rate over the rate alone: at 1 rank, 1 / (1 + overhead); at N ranks, the
        # scaling efficiency, total rate / (N * rate alone). Each round's own ratio, then their
        # median and quartiles: blocks of one round ran back to back, so drift in the host's
        # speed between rounds cancels out.
        print(f"{'method':24}{'img/s per rank':>16}{'ratio to alone':>16}{'quartiles':>16}")
        results = {}
        for name, rate in rates.items():
            baseline = seconds["alone, XLA" if "XLA" in name else "alone"]
            ratios = [a / s for a, s in zip(baseline, seconds[name])]
            low, _, high = statistics.quantiles(ratios, n=4) if len(ratios) > 1 else ratios * 3
            print(f"{name:24}{rate:16.1f}{statistics.median(ratios):16.3f}{f'{low:.3f}-{high:.3f}':>16}")
            results[name] = {"images_per_sec_per_rank": rate, "ratio_to_alone": statistics.median(ratios),
                             "quartiles": [low, high]}
        if args.json:
            with open(args.json, "w") as f:
                json.dump({"np": size, "model": args.model, "batch_size": args.batch_size,
                           "steps": args.steps, "rounds": args.rounds, "methods": results}, f, indent=1)


if __name__ == "__main__":
    main()
