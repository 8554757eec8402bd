"""ZeroRedundancyOptimizer against DistributedOptimizer, both wrapping Adam: the optimizer state
each rank holds, and the training step's time.

    mpirun -np 2 python benchmarks/zero_optimizer.py                 # state and step time
    mpirun -np 4 python benchmarks/zero_optimizer.py --blocks 0      # state only

State: ResNet-50 (224 px, 1000 classes, --state-model) is built and each optimizer builds its
slots for its trainable variables. Reported per rank: the bytes of the optimizer's variables,
and how much the process's resident memory grew while the optimizer built them (ZeRO's first,
so that memory freed by the other cannot be reused for it).

Step time: Model.fit of the small ResNet-style CNN of tf_keras_cnn.py or of a 4-layer MLP
(--time-model; 32 px, batch 32 per rank), ZeRO and DistributedOptimizer in alternating blocks
of one job, so that load from other jobs on a shared host hits both alike. Reported: the
median over blocks of the ratio of ZeRO's step time to DistributedOptimizer's in the same
round, with its quartiles.

    mpirun -np 2 python benchmarks/zero_optimizer.py --state-model small_resnet --time-model mlp

--json F writes both for run_all.py (and across_hosts.py, which runs it across the emulated
hosts with --state-model none).
"""

import argparse
import json
import statistics
import time

import numpy as np
import tensorflow as tf

import mpirep.tensorflow.keras as hvd
from mpirep.tensorflow.zero import DEFAULT_BUCKET_BYTES
from tf_keras_cnn import small_resnet, synthetic_data


WRAPPERS = (("ZeRO", hvd.ZeroRedundancyOptimizer), ("Distributed", hvd.DistributedOptimizer))


def resident_bytes():
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * 4096


def optimizer_bytes(optimizer):
    variables = optimizer.variables
    return sum(v.numpy().nbytes for v in (variables() if callable(variables) else variables))


def slice_copy_bytes(optimizer, variables):
    """The bytes of the variables a ZeRO optimizer holds for its slices of model variables
    (a copy of those slices of the parameters, which it updates); 0 for any other optimizer."""
    if not hasattr(optimizer, "shard_plan"):
        return 0
    plan = optimizer.shard_plan()
    return sum(piece.size * tf.as_dtype(variables[piece.index].dtype).size
               for piece in plan.owned if not plan.is_whole(piece))


def state(model_name):
    build = {"resnet50": lambda: tf.keras.applications.ResNet50(weights=None),
             "small_resnet": small_resnet}[model_name]
    tf.keras.utils.set_random_seed(1)
    variables = build().trainable_variables
    rows = {}
    for name, wrap in WRAPPERS:
        optimizer = wrap(tf.keras.optimizers.Adam(1e-3))
        before = resident_bytes()
        optimizer.build(variables)
        grown = resident_bytes() - before
        rows[name] = (optimizer_bytes(optimizer), grown, slice_copy_bytes(optimizer, variables))
    return rows, sum(v.numpy().nbytes for v in variables)


def mlp():
    """Four 1024-wide layers on 32x32x3 images: 6.3 M parameters (24.1 MiB), little compute
    per parameter, so the gradient exchange and Adam's update weigh in the step."""
    inputs = tf.keras.Input((32, 32, 3))
    x = tf.keras.layers.Flatten()(inputs)
    for _ in range(4):
        x = tf.keras.layers.Dense(1024, activation="relu")(x)
    return tf.keras.Model(inputs, tf.keras.layers.Dense(10)(x))


TIME_MODELS = {"small_resnet": small_resnet, "mlp": mlp}


def step_times(build, blocks, steps, batch, zero_options):
    data = synthetic_data(batch, hvd.rank())
    models = {}
    for name, wrap in WRAPPERS:
        tf.keras.utils.set_random_seed(1)
        model = build()
        options = zero_options if name == "ZeRO" else {}
        model.compile(optimizer=wrap(tf.keras.optimizers.Adam(1e-3), **options),
                      loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
        model.fit(data, steps_per_epoch=3, epochs=1, verbose=0)   # traces, warms up
        models[name] = model
    ratios, seconds = [], {name: [] for name in models}
    for _ in range(blocks):
        times = {}
        for name, model in models.items():
            hvd.allreduce(np.zeros(1), name="zero_bench.barrier")
            started = time.perf_counter()
            model.fit(data, steps_per_epoch=steps, epochs=1, verbose=0)
            times[name] = (time.perf_counter() - started) / steps
            seconds[name].append(times[name])
        ratios.append(times["ZeRO"] / times["Distributed"])
    return ratios, seconds


def report_state(model_name):
    """Prints the state table on rank 0; the per-rank rows for the results."""
    rows, parameters = state(model_name)
    everyone = hvd.allgather_object(rows)
    if hvd.rank() == 0:
        mib = 2.0 ** 20
        print(f"optimizer state per rank, {model_name} with Adam, np={hvd.size()} "
              f"(parameters: {parameters / mib:.1f} MiB)")
        print("rank | ZeRO state MiB | Distributed state MiB | ratio | ZeRO slice copies MiB | "
              "RSS growth ZeRO MiB | RSS growth Distributed MiB")
        for rank, per in enumerate(everyone):
            zero, dist = per["ZeRO"], per["Distributed"]
            print(f"{rank} | {zero[0] / mib:.1f} | {dist[0] / mib:.1f} | "
                  f"{zero[0] / dist[0]:.3f} | {zero[2] / mib:.1f} | {zero[1] / mib:.1f} | "
                  f"{dist[1] / mib:.1f}")
        worst = max(per["ZeRO"][0] / per["Distributed"][0] for per in everyone)
        print(f"largest ratio {worst:.3f}; target 1/np + 5% = {1 / hvd.size() + 0.05:.3f}")
    return {"model": model_name, "parameter_bytes": parameters,
            "ranks": [{name: {"state_bytes": per[name][0], "rss_growth_bytes": per[name][1],
                              "slice_copy_bytes": per[name][2]}
                       for name in per} for per in everyone]}


def report_step_times(args):
    """Prints the step-time line on rank 0; the ratios and step times for the results."""
    zero_options = {"shard": args.shard, "bucket_bytes": int(args.bucket_mib * 2 ** 20)}
    ratios, seconds = step_times(TIME_MODELS[args.time_model], args.blocks, args.steps, args.batch,
                                 zero_options)
    q = statistics.quantiles(ratios, n=4) if len(ratios) > 1 else ratios * 3
    if hvd.rank() == 0:
        print(f"step time, {args.time_model} 32 px, batch {args.batch}/rank, np={hvd.size()}: "
              f"ZeRO {statistics.median(seconds['ZeRO']) * 1e3:.1f} ms, Distributed "
              f"{statistics.median(seconds['Distributed']) * 1e3:.1f} ms; ratio median "
              f"{statistics.median(ratios):.3f} (quartiles {q[0]:.3f}..{q[2]:.3f})")
    return {"model": args.time_model, "batch": args.batch, "steps_per_block": args.steps,
            "shard": args.shard, "bucket_mib": args.bucket_mib,
            "ratios": ratios, "seconds": seconds, "median": statistics.median(ratios),
            "quartiles": [q[0], q[2]]}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--state-model", default="resnet50", choices=["resnet50", "small_resnet", "none"])
    parser.add_argument("--time-model", default="small_resnet", choices=sorted(TIME_MODELS))
    parser.add_argument("--blocks", type=int, default=7, help="timed rounds (0: none)")
    parser.add_argument("--steps", type=int, default=10, help="steps per timed block")
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--shard", default="auto", choices=["auto", "slices", "variables"],
                        help="ZeroRedundancyOptimizer's shard option in the timed steps")
    parser.add_argument("--bucket-mib", type=float, default=DEFAULT_BUCKET_BYTES / 2 ** 20,
                        help="its bucket_bytes, in MiB")
    parser.add_argument("--json", help="where rank 0 writes the results")
    args = parser.parse_args()
    tf.config.threading.set_intra_op_parallelism_threads(1)
    hvd.init()
    results = {"np": hvd.size()}
    if args.state_model != "none":
        results["state"] = report_state(args.state_model)
    if args.blocks:
        results["step"] = report_step_times(args)
    if args.json and hvd.rank() == 0:
        with open(args.json, "w") as out:
            json.dump(results, out, indent=1)


if __name__ == "__main__":
    main()
