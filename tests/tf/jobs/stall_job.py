"""The stall shutdown through the TF layer: rank 1 names a tensor differently from the others;
with MPIREP_STALL_SHUTDOWN_TIME_SECONDS set (by the driver), every rank gets the same
tf.errors.DeadlineExceededError naming both tensors, eagerly and in a tf.function, and the
next allreduce works, also one that takes either name again: the ranks had diverged (each
waited for the other), so none of them is late for the other's tensor. Run under mpirun at 2
or more ranks with the native bridge."""

import numpy as np
import tensorflow as tf

import mpirep.tensorflow as hvd
from harness import check, run, same_on_every_rank

hvd.init()
R, N = hvd.rank(), hvd.size()
assert N >= 2, "stall_job needs at least 2 ranks"


@check
def a_renamed_tensor_is_deadline_exceeded_on_every_rank():
    for mode in ("eager", "function"):
        name = f"{mode}.renamed" if R == 1 else f"{mode}.grads"
        reduce = lambda x: hvd.allreduce(x, name=name)  # noqa: E731
        try:
            (reduce if mode == "eager" else tf.function(reduce))(tf.ones(3))
            raise AssertionError(f"{mode}: no error")
        except tf.errors.DeadlineExceededError as error:
            message = error.message
        assert f"tensor '{mode}.grads' (allreduce)" in message, message
        assert f"tensor '{mode}.renamed' (allreduce) waiting" in message, message
        assert "submitted by rank 1; missing rank" in message, message
        same_on_every_rank(hvd, np.frombuffer(message.encode(), np.uint8))
        for again in ("next", "grads", "renamed"):
            summed = hvd.allreduce(tf.fill([2], float(R + 1)), op=hvd.Sum, name=f"{mode}.{again}")
            np.testing.assert_array_equal(summed.numpy(), np.full(2, N * (N + 1) / 2))


@check
def later_graphs_do_not_inherit_a_cancelled_graph_name():
    # Unnamed ops take their graph's names: "allgather" on rank 1, "allreduce" elsewhere, the
    # names that the first ops of every later tf.function take too.
    diverged = tf.function(lambda x: hvd.allgather(x) if R == 1 else hvd.allreduce(x))
    try:
        diverged(tf.ones(2))
        raise AssertionError("no error")
    except tf.errors.DeadlineExceededError:
        pass
    summed = tf.function(lambda x: hvd.allreduce(x, op=hvd.Sum))(tf.fill([2], float(R + 1)))
    np.testing.assert_array_equal(summed.numpy(), np.full(2, N * (N + 1) / 2))
    gathered = tf.function(hvd.allgather)(tf.fill([1], float(R)))
    np.testing.assert_array_equal(gathered.numpy(), np.arange(N, dtype=np.float32))


run(hvd)
