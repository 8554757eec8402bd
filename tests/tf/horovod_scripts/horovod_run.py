# A Horovod script that starts its own job with horovod.run (run it with python, not mpirun).
import sys

import horovod
import horovod.tensorflow.keras as hvd


def train(scale):
    hvd.init()
    import tensorflow as tf

    total = hvd.allreduce(tf.constant((hvd.rank() + 1) * scale), op=hvd.Sum)
    return hvd.rank(), hvd.size(), float(total)


def fail_on_rank_one():
    hvd.init()
    if hvd.rank() == 1:
        raise ValueError("rank one refuses")
    return hvd.rank()


if __name__ == "__main__":
    results = horovod.run(train, args=(2.0,), np=2, hosts="localhost:2")
    assert results == [(0, 2, 6.0), (1, 2, 6.0)], results
    try:
        horovod.run(fail_on_rank_one, np=2)
    except RuntimeError as error:
        assert "rank 1" in str(error) and "ValueError: rank one refuses" in str(error), error
    else:
        sys.exit("horovod.run did not raise for a failing rank")
    print("horovod_run: ok", results)
