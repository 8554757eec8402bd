"""Ops on process sets: on the set {0, 1} and on {1, .., N-1}, against closed forms, eagerly and
in tf.function, with gradients; roots are global ranks, as in Horovod; ranks outside a set
raise, except that a DistributedGradientTape there returns the local gradient; unknown sets
raise. Run under mpirun at 3 or more ranks."""

import numpy as np
import tensorflow as tf

import mpirep.tensorflow as hvd
from harness import check, expect_error, run

hvd.init()
R, N = hvd.rank(), hvd.size()
assert N >= 3, "process_sets_job needs at least 3 ranks"
PAIR = hvd.add_process_set([0, 1])
TAIL = hvd.add_process_set(hvd.ProcessSet(range(1, N)))
MODES = ("eager", "function")


def call(mode, fn, *args):
    return fn(*args) if mode == "eager" else tf.function(fn, autograph=False)(*args)


def value(r, shape=(3, 2)):
    return ((r + 1) * (np.arange(np.prod(shape)) % 7 + 1) - r).reshape(shape).astype(np.float32)


@check
def set_membership():
    assert PAIR.ranks == [0, 1] and TAIL.ranks == list(range(1, N))
    assert PAIR.process_set_id not in (None, 0) and TAIL.process_set_id != PAIR.process_set_id
    assert TAIL.size() == N - 1 and TAIL.rank() == (R - 1 if R >= 1 else -1)
    assert PAIR.included() == (R < 2)


@check
def allreduce_and_gradient_on_a_pair():
    if R >= 2:
        expect_error(tf.errors.InvalidArgumentError,
               lambda: hvd.allreduce(tf.ones(2), process_set=PAIR))
        return
    for mode in MODES:
        def fn(x):
            with tf.GradientTape() as tape:
                tape.watch(x)
                y = hvd.allreduce(x, op=hvd.Average, process_set=PAIR)
                loss = tf.reduce_sum(y * (R + 2.0))
            return y, tape.gradient(loss, x)

        y, g = call(mode, fn, tf.constant(value(R)))
        np.testing.assert_allclose(y.numpy(), (value(0) + value(1)) / 2, rtol=1e-6)
        # d/dx of the average over the pair of the pair's weights 2 and 3.
        np.testing.assert_allclose(g.numpy(), np.full((3, 2), (2.0 + 3.0) / 2))
        summed = call(mode, lambda a, b: hvd.grouped_allreduce([a, b], op=hvd.Sum,
                                                               process_set=PAIR),
                      tf.constant(value(R)), tf.constant(value(R, (4,))))
        np.testing.assert_allclose(summed[1].numpy(), value(0, (4,)) + value(1, (4,)))


@check
def gather_broadcast_scatter_alltoall_on_the_tail():
    if R == 0:
        expect_error(tf.errors.InvalidArgumentError, lambda: hvd.allgather(tf.ones(1), process_set=TAIL))
        return
    members, me = list(range(1, N)), R - 1
    for mode in MODES:
        gathered = call(mode, lambda x: hvd.allgather(x, process_set=TAIL),
                        tf.constant(value(R, (R, 2))))
        np.testing.assert_array_equal(gathered.numpy(),
                                      np.concatenate([value(r, (r, 2)) for r in members]))
        # root_rank is a global rank, also on a set.
        root = call(mode, lambda x: hvd.broadcast(x, root_rank=2, process_set=TAIL),
                    tf.constant(value(R)))
        np.testing.assert_array_equal(root.numpy(), value(2))
        expect_error(tf.errors.InvalidArgumentError,
                     lambda: hvd.broadcast(tf.ones(1), root_rank=0, process_set=TAIL))

        def broadcast_grad(x):
            with tf.GradientTape() as tape:
                tape.watch(x)
                loss = tf.reduce_sum(hvd.broadcast(x, root_rank=2, process_set=TAIL) * (R + 2.0))
            return tape.gradient(loss, x)

        # The root gets the weights averaged over the set; the other members zeros.
        grad = call(mode, broadcast_grad, tf.constant(value(R)))
        want = sum(r + 2.0 for r in members) / (N - 1) if R == 2 else 0.0
        np.testing.assert_array_equal(grad.numpy(), np.full((3, 2), want, np.float32))
        rows = 2 * (N - 1)
        block = call(mode, lambda x: hvd.reducescatter(x, op=hvd.Sum, process_set=TAIL),
                     tf.constant(value(R, (rows, 2))))
        total = sum(value(r, (rows, 2)) for r in members)
        np.testing.assert_allclose(block.numpy(), total[2 * me:2 * me + 2])
        # Set rank s sends to set rank j one row holding 10 * s + j.
        sent = np.array([[10.0 * me + j] for j in range(N - 1)], np.float32)
        got = call(mode, lambda x: hvd.alltoall(x, process_set=TAIL), tf.constant(sent))
        np.testing.assert_array_equal(got.numpy(), [[10.0 * s + me] for s in range(N - 1)])


@check
def tape_and_variables_on_a_set():
    if R == 0:
        return
    w = tf.Variable(np.full(3, float(R), np.float32))
    hvd.broadcast_variables([w], root_rank=1, process_set=TAIL)
    np.testing.assert_array_equal(w.numpy(), np.full(3, 1.0))
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(w * float(R))
    tape = hvd.DistributedGradientTape(tape, process_set=TAIL)
    (grad,) = tape.gradient(loss, [w])
    np.testing.assert_allclose(grad.numpy(), np.full(3, sum(range(1, N)) / (N - 1)))
    assert hvd.broadcast_object(("from", R), root_rank=N - 1, process_set=TAIL) == ("from", N - 1)
    assert hvd.allgather_object(R, process_set=TAIL) == list(range(1, N))


@check
def outside_its_set_a_tape_returns_the_local_gradient():
    w = tf.Variable(np.full(2, float(R), np.float32))
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(w * w)
    (grad,) = hvd.DistributedGradientTape(tape, process_set=PAIR).gradient(loss, [w])
    # d(w * w)/dw = 2w, averaged over the pair {0, 1}; rank 2 and above keep their own.
    want = 2.0 * (0 + 1) / 2 if R < 2 else 2.0 * R
    np.testing.assert_array_equal(grad.numpy(), np.full(2, want, np.float32))


@check
def set_size_and_membership_ops():
    for mode in MODES:
        got = call(mode, lambda: tf.stack([hvd.size_op(TAIL.process_set_id),
                                           hvd.process_set_included_op(TAIL.process_set_id),
                                           hvd.process_set_included_op(PAIR.process_set_id)]))
        np.testing.assert_array_equal(got.numpy(), [N - 1, int(R >= 1), int(R < 2)])


@check
def global_ops_stay_in_step_after_set_ops():
    # Only the pair issued unnamed set ops above; unnamed global ops still match up.
    got = hvd.allreduce(tf.constant([float(R)]), op=hvd.Sum)
    np.testing.assert_allclose(got.numpy(), [N * (N - 1) / 2])


@check
def unknown_and_removed_sets_raise_value_error():
    expect_error(ValueError, lambda: hvd.allreduce(tf.ones(1), process_set=hvd.ProcessSet([0, 2])))
    fake = hvd.ProcessSet([0, 1])
    fake.process_set_id = 999
    expect_error(ValueError, lambda: hvd.allreduce(tf.ones(1), process_set=fake))
    temporary = hvd.add_process_set([0, N - 1])
    if temporary.included():
        got = hvd.allreduce(tf.constant([R + 1.0]), op=hvd.Sum, process_set=temporary)
        np.testing.assert_allclose(got.numpy(), [1.0 + N])
    assert hvd.remove_process_set(temporary)
    expect_error(ValueError, lambda: hvd.allreduce(tf.ones(1), process_set=temporary))


run(hvd)
