"""One ResNet-50 gradient round at the TensorFlow level against the same round through the
numpy API, in alternating blocks of one run:

    mpirun -np 2 python benchmarks/tf_resnet50_round.py

"tf.function": a tf.function that allreduces (Sum) the 214 float32 gradients of ResNet-50, one
op per gradient in backprop order (last layer first), as DistributedOptimizer issues them;
"numpy API": the round of resnet50_round.py, every gradient submitted with allreduce_async
before any is awaited. Both sum the same exact-valued floats and must agree bit for bit. The
ratio says what the TensorFlow layer adds to the core's round.
"""
import numpy as np
import tensorflow as tf
from mpi4py import MPI

import mpirep
import mpirep.tensorflow as hvd
from common import exact_floats, median_times, parse_args, print_table, start, write_json
from resnet50_shapes import SHAPES, TOTAL, split


def main():
    args = parse_args(__doc__, lambda p: p.add_argument("--repeats", type=int, default=15))
    comm = MPI.COMM_WORLD.Dup()
    config = start(args)
    arrays = split(exact_floats(comm.rank, TOTAL))
    order = list(reversed(range(len(arrays))))
    tensors = [tf.constant(a) for a in arrays]

    @tf.function
    def tf_round(grads):
        return [hvd.allreduce(grads[i], op=hvd.Sum) for i in order]

    def numpy_round():
        handles = [mpirep.allreduce_async(arrays[i], op=mpirep.Sum, name=f"grad.{i}")
                   for i in order]
        return [mpirep.synchronize(h) for h in handles]

    for expected, got in zip(numpy_round(), tf_round(tensors)):
        assert np.array_equal(expected, got.numpy()), "the two rounds differ"

    seconds = median_times(comm, {"tf.function": lambda: tf_round(tensors),
                                  "numpy API": numpy_round}, args.repeats)
    ratio = seconds["tf.function"] / seconds["numpy API"]
    rows = [[name, f"{s * 1e3:.2f}"] for name, s in seconds.items()]
    print_table(comm, f"ResNet-50 gradient round, {len(SHAPES)} tensors, "
                f"{TOTAL * 4 / 2**20:.1f} MiB, np={comm.size}, median of {args.repeats}, "
                f"config={config or 'default'}; tf.function / numpy API = {ratio:.2f}",
                ["method", "round ms"], rows)
    write_json(comm, args.json, {"np": comm.size, "config": config, "repeats": args.repeats,
                                 "seconds": seconds, "tf_over_numpy": ratio})
    mpirep.shutdown()


if __name__ == "__main__":
    main()
