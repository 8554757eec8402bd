"""Every mpirep.tensorflow op against its closed form, eagerly, in tf.function and in a
tf.compat.v1 graph, with its gradient (Horovod's: an allgather or broadcast averages the
incoming gradient over ranks, a Sum reducescatter scales it by the number of ranks); errors as
TF errors on every rank. Run under mpirun at any number of ranks."""

import re

import numpy as np
import tensorflow as tf

import mpirep.tensorflow as hvd
from harness import check, run, same_on_every_rank

try:
    hvd.allreduce(tf.ones(2))
    raise AssertionError("an op before init did not fail")
except ValueError as error:
    assert "init" in str(error)

hvd.init()
R, N = hvd.rank(), hvd.size()
MODES = ("eager", "function", "graph")


def call(mode, fn, *args):
    """fn(*args) eagerly, in a tf.function, or built in a tf.compat.v1 graph and run in a
    session (where a rank that skipped one of a gradient's collectives would hang the job)."""
    if mode == "eager":
        return fn(*args)
    if mode == "function":
        return tf.function(fn, autograph=False)(*args)
    with tf.Graph().as_default(), tf.compat.v1.Session() as session:
        outputs = session.run(fn(*[tf.constant(np.asarray(a)) for a in args]))
    return tf.nest.map_structure(tf.constant, outputs)


def value(r, shape=(3, 2), dtype=np.float32):
    """Rank- and index-dependent input, exactly representable in every dtype used here."""
    return ((r + 1) * (np.arange(np.prod(shape)) % 7 + 1) - r).reshape(shape).astype(dtype)


def mean_weight():
    return sum(r + 2.0 for r in range(N)) / N


def with_grad(op):
    """op(x) and d sum(op(x) * w) / dx for a rank-dependent weight w."""
    def fn(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = op(x)
            loss = tf.reduce_sum(tf.cast(y, tf.float32) * (R + 2.0))
        return y, tape.gradient(loss, x)
    return fn


@check
def allreduce_every_op():
    everyone = np.stack([value(r) for r in range(N)])
    expected = {hvd.Sum: everyone.sum(0), hvd.Average: everyone.sum(0) / N,
                hvd.Min: everyone.min(0), hvd.Max: everyone.max(0), hvd.Product: everyone.prod(0)}
    for mode in MODES:
        for op, want in expected.items():
            got = call(mode, lambda x: hvd.allreduce(x, op=op), tf.constant(value(R)))
            np.testing.assert_allclose(got.numpy(), want, rtol=1e-6)
            same_on_every_rank(hvd, got)
        ints = call(mode, lambda x: hvd.allreduce(x, op=hvd.Sum), tf.constant(value(R, dtype=np.int32)))
        np.testing.assert_array_equal(ints.numpy(), everyone.sum(0).astype(np.int32))


@check
def allreduce_gradient():
    grad_sum = sum(r + 2.0 for r in range(N))
    for mode in MODES:
        for op, scale in ((hvd.Sum, 1.0), (hvd.Average, 1.0 / N)):
            y, g = call(mode, with_grad(lambda x: hvd.allreduce(x, op=op)), tf.constant(value(R)))
            np.testing.assert_allclose(g.numpy(), np.full((3, 2), grad_sum * scale), rtol=1e-6)


@check
def allreduce_scaling_and_fp16():
    total = sum(value(r) for r in range(N))
    for mode in MODES:
        got = call(mode, lambda x: hvd.allreduce(x, op=hvd.Sum, prescale_factor=0.5,
                                                 postscale_factor=4.0), tf.constant(value(R)))
        np.testing.assert_allclose(got.numpy(), total * 2.0, rtol=1e-6)
        got = call(mode, lambda x: hvd.allreduce(x, op=hvd.Sum, compression=hvd.Compression.fp16),
                   tf.constant(value(R)))
        assert got.dtype == tf.float32
        np.testing.assert_allclose(got.numpy(), total, rtol=1e-3)


@check
def grouped_allreduce_and_gradient():
    shapes = [(4,), (2, 3), (1,)]
    for mode in MODES:
        def fn(a, b, c):
            with tf.GradientTape() as tape:
                tape.watch([a, b, c])
                outs = hvd.grouped_allreduce([a, b, c], op=hvd.Sum)
                loss = sum(tf.reduce_sum(o) for o in outs) * (R + 1.0)
            return outs, tape.gradient(loss, [a, b, c])
        outs, grads = call(mode, fn, *[tf.constant(value(R, s)) for s in shapes])
        for out, grad, shape in zip(outs, grads, shapes):
            np.testing.assert_allclose(out.numpy(), sum(value(r, s := shape) for r in range(N)))
            np.testing.assert_allclose(grad.numpy(), np.full(s, N * (N + 1) / 2.0))


@check
def allgather_uneven_and_gradient():
    rows = lambda r: r + 1  # noqa: E731
    for mode in MODES:
        y, g = call(mode, with_grad(hvd.allgather), tf.constant(value(R, (rows(R), 2))))
        np.testing.assert_array_equal(y.numpy(), np.concatenate([value(r, (rows(r), 2)) for r in range(N)]))
        # Each rank's rows feed every rank's loss; Horovod averages the ranks' weights.
        np.testing.assert_allclose(g.numpy(), np.full((rows(R), 2), mean_weight()))
        same_on_every_rank(hvd, y)


@check
def broadcast_every_root_and_gradient():
    for mode in MODES:
        for root in range(N):
            y, g = call(mode, with_grad(lambda x: hvd.broadcast(x, root)), tf.constant(value(R)))
            np.testing.assert_array_equal(y.numpy(), value(root))
            want = mean_weight() if R == root else 0.0
            np.testing.assert_array_equal(g.numpy(), np.full((3, 2), want, np.float32))


@check
def reduce_onto_every_root_and_gradient():
    everyone = np.stack([value(r) for r in range(N)])
    cases = ((hvd.Sum, everyone.sum(0), 1.0), (hvd.Average, everyone.sum(0) / N, 1.0 / N),
             (hvd.Max, everyone.max(0), None))
    for mode in MODES:
        for root in range(N):
            for op, reduced, slope in cases:
                reduce = lambda x: hvd.reduce(x, root_rank=root, op=op)  # noqa: E731
                x = tf.constant(value(R))
                y, g = call(mode, with_grad(reduce), x) if slope else (call(mode, reduce, x), None)
                want = reduced if R == root else np.zeros((3, 2), np.float32)
                np.testing.assert_allclose(y.numpy(), want, rtol=1e-6, err_msg=f"{mode} root {root}")
                if slope:  # only the root's output feeds a loss: its weight, root + 2
                    np.testing.assert_allclose(g.numpy(), np.full((3, 2), (root + 2.0) * slope),
                                               rtol=1e-6, err_msg=f"{mode} root {root} gradient")
    try:
        hvd.reduce(tf.ones(3), root_rank=N)
        raise AssertionError("no error")
    except tf.errors.InvalidArgumentError as error:
        assert f"rank {R}: root rank {N} is outside 0..{N - 1}" in str(error), error


@check
def reducescatter_and_gradient():
    total = sum(value(r, (2 * N + 1, 2)) for r in range(N))
    start = sum(2 + (r < 1) for r in range(R))  # rank 0 gets the extra row
    mine = total[start:start + 2 + (R < 1)]
    for mode in MODES:
        y, g = call(mode, with_grad(lambda x: hvd.reducescatter(x, op=hvd.Sum)),
                    tf.constant(value(R, (2 * N + 1, 2))))
        np.testing.assert_allclose(y.numpy(), mine)
        # Horovod scales a Sum reducescatter's gradient by the number of ranks.
        weights = np.concatenate([np.full((2 + (r < 1), 2), N * (r + 2.0)) for r in range(N)])
        np.testing.assert_allclose(g.numpy(), weights)


@check
def grouped_allgather_and_reducescatter_with_gradients():
    # Two tensors of different dtypes in one group; rank r brings r + 1 rows to the gather.
    rows = 2 * N
    for mode in MODES:
        def fn(a, b):
            with tf.GradientTape() as tape:
                tape.watch([a, b])
                gathered = hvd.grouped_allgather([a, b])
                scattered = hvd.grouped_reducescatter([b, 3.0 * b], op=hvd.Sum)
                loss = (tf.cast(tf.reduce_sum(gathered[0]), tf.float64) +
                        tf.reduce_sum(gathered[1] * 2.0) + tf.reduce_sum(scattered[1] * (R + 2.0)))
            return gathered, scattered[1], tape.gradient(loss, [a, b])
        a = value(R, (R + 1, 3))
        b = value(R, (rows, 2), np.float64)
        gathered, scattered, (ga, gb) = call(mode, fn, tf.constant(a), tf.constant(b))
        np.testing.assert_array_equal(gathered[0].numpy(),
                                      np.concatenate([value(r, (r + 1, 3)) for r in range(N)]))
        everyone_b = [value(r, (rows, 2), np.float64) for r in range(N)]
        np.testing.assert_array_equal(gathered[1].numpy(), np.concatenate(everyone_b))
        np.testing.assert_array_equal(scattered.numpy(), 3.0 * sum(everyone_b)[2 * R:2 * R + 2])
        np.testing.assert_array_equal(ga.numpy(), np.ones((R + 1, 3), np.float32))
        # b: 2 from its allgather (averaged over ranks, still 2), and on rank j's block of rows
        # 3 times N times rank j's weight from the Sum reducescatter of 3b.
        want = 2.0 + np.repeat([[3.0 * N * (j + 2.0)] * 2 for j in range(N)], 2, axis=0)
        np.testing.assert_array_equal(gb.numpy(), want)


@check
def integer_scale_factors_are_not_truncated_first():
    # 0.5 and 1.5 would both become 0 or 1 if cast to an integer before multiplying.
    rows = 2 * N
    x = np.arange(rows * 3, dtype=np.int32).reshape(rows, 3) * (R + 1) + 7
    for mode in MODES:
        got = call(mode, lambda t: hvd.reducescatter(t, op=hvd.Sum, prescale_factor=0.5,
                                                     postscale_factor=1.5), tf.constant(x))
        # Each rank's input is halved (truncated toward zero), summed, then scaled by 1.5.
        halves = sum(np.trunc((np.arange(rows * 3).reshape(rows, 3) * (r + 1) + 7) * 0.5)
                     for r in range(N))
        want = np.trunc(halves * 1.5).astype(np.int32)[2 * R:2 * R + 2]
        assert got.dtype == tf.int32
        np.testing.assert_array_equal(got.numpy(), want)
        averaged = call(mode, lambda v: hvd.allreduce(
            tf.IndexedSlices(v, tf.constant([R], tf.int64), tf.constant([N, 2], tf.int64)),
            op=hvd.Average).values, tf.constant(np.full((1, 2), 3 * (R + 1), np.int32)))
        # As in Horovod, integer values are divided truly, into floats.
        np.testing.assert_array_equal(averaged.numpy(),
                                      [[3.0 * (r + 1) / N] * 2 for r in range(N)])


@check
def rank_and_size_ops():
    for mode in MODES:
        got = call(mode, lambda: tf.stack([hvd.rank_op(), hvd.size_op(), hvd.local_rank_op(),
                                           hvd.local_size_op(), hvd.process_set_included_op()]))
        assert got.dtype == tf.int32
        np.testing.assert_array_equal(got.numpy(), [R, N, hvd.local_rank(), hvd.local_size(), 1])


@check
def in_place_broadcast_of_variables():
    for root in range(N):
        variables = [tf.Variable(value(R)), tf.Variable(tf.fill([4], R % 2 == 0))]
        values = hvd.broadcast_(variables, root)
        np.testing.assert_array_equal(variables[0].numpy(), value(root))
        np.testing.assert_array_equal(values[1].numpy(), np.full(4, root % 2 == 0))
    with tf.Graph().as_default(), tf.compat.v1.Session() as session:
        ref = tf.compat.v1.Variable(value(R), use_resource=False)
        resource = tf.compat.v1.Variable(value(R, (5,), np.int64), use_resource=True)
        values = hvd.broadcast_([ref, resource], N - 1)
        session.run(tf.compat.v1.global_variables_initializer())
        got = session.run(values)
        np.testing.assert_array_equal(got[0], value(N - 1))
        np.testing.assert_array_equal(session.run(resource), value(N - 1, (5,), np.int64))


@check
def reducescatter_scales_in_the_core():
    """Prescale and postscale are applied by the core, once, in double: integers are truncated
    toward zero after each scaling, floats exact here."""
    rows = 2 * N + 1
    start = sum(2 + (r < 1) for r in range(R))
    stop = start + 2 + (R < 1)
    for dtype in (np.int32, np.float32):
        total = sum(3 * value(r, (rows, 2), dtype).astype(np.float64) for r in range(N))
        scaled = total * 0.5
        want = np.trunc(scaled) if dtype == np.int32 else scaled
        for mode in MODES:
            got = call(mode, lambda x: hvd.reducescatter(x, op=hvd.Sum, prescale_factor=3,
                                                         postscale_factor=0.5),
                       tf.constant(value(R, (rows, 2), dtype)))
            assert got.dtype == tf.as_dtype(dtype)
            np.testing.assert_array_equal(got.numpy(), want[start:stop].astype(dtype))


@check
def grouped_allreduce_of_different_lengths_fails_on_every_rank():
    if N == 1:
        return
    lengths = [2 + r % 2 for r in range(N)]
    ranks_of = {}
    for r, length in enumerate(lengths):
        ranks_of.setdefault(length, []).append(r)
    by_rank = "; ".join(f"{length} on rank{'s' if len(ranks) > 1 else ''} {', '.join(map(str, ranks))}"
                        for length, ranks in ranks_of.items())
    native = hvd_bridge_name() == "native"
    for mode in MODES:
        tensors = [tf.constant(value(R)) for _ in range(lengths[R])]
        try:
            call(mode, lambda *xs: hvd.grouped_allreduce(list(xs), op=hvd.Sum,
                                                         name=f"uneven_group.{mode}"), *tensors)
            raise AssertionError("no error")
        except tf.errors.FailedPreconditionError as error:
            assert re.search(rf"mismatched group sizes for tensor '[^']*': {by_rank}", str(error)), error
        except tf.errors.UnknownError as error:
            # numpy_function in a graph (tf.function or TF1) reports every Python error as Unknown.
            assert not native and mode != "eager" and "mismatched group sizes" in str(error), error
        after = call(mode, lambda x: hvd.allreduce(x, op=hvd.Sum), tf.constant(value(R)))
        np.testing.assert_allclose(after.numpy(), sum(value(r) for r in range(N)))


@check
def alltoall_with_splits_and_gradient():
    # Rank r sends j + 1 rows to rank j; row values encode (sender, destination).
    def rows_for(sender):
        return np.concatenate([np.full((j + 1, 2), 10 * sender + j, np.float32) for j in range(N)])
    for mode in MODES:
        def fn(x):
            with tf.GradientTape() as tape:
                tape.watch(x)
                y, received = hvd.alltoall(x, splits=tf.range(1, N + 1))
                loss = tf.reduce_sum(y * (R + 2.0))
            return y, received, tape.gradient(loss, x)
        y, received, g = call(mode, fn, tf.constant(rows_for(R)))
        np.testing.assert_array_equal(received.numpy(), np.full(N, R + 1))
        np.testing.assert_array_equal(y.numpy(), np.concatenate(
            [np.full((R + 1, 2), 10 * s + R, np.float32) for s in range(N)]))
        np.testing.assert_allclose(g.numpy(), np.concatenate(
            [np.full((j + 1, 2), j + 2.0) for j in range(N)]))
        even = call(mode, hvd.alltoall, tf.constant(np.arange(2 * N, dtype=np.int64) + 100 * R))
        np.testing.assert_array_equal(even.numpy(), [100 * s + 2 * R + k for s in range(N) for k in range(2)])


@check
def indexed_slices_gather():
    slices = tf.IndexedSlices(tf.constant(value(R, (1, 2))), tf.constant([R], tf.int64),
                              dense_shape=tf.constant([N, 2], tf.int64))
    reduced = hvd.allreduce(slices, op=hvd.Average)
    assert isinstance(reduced, tf.IndexedSlices)
    np.testing.assert_allclose(tf.convert_to_tensor(reduced).numpy(),
                               np.concatenate([value(r, (1, 2)) / N for r in range(N)]))
    for op in (hvd.Min, hvd.Max):
        try:
            hvd.allreduce(slices, op=op)
            raise AssertionError("no NotImplementedError")
        except NotImplementedError:
            pass


@check
def objects_and_variables():
    assert hvd.broadcast_object({"rank": R, "list": [R] * 3}, root_rank=N - 1) == \
        {"rank": N - 1, "list": [N - 1] * 3}
    assert hvd.allgather_object(("r", R)) == [("r", r) for r in range(N)]
    variables = [tf.Variable(value(R)), tf.Variable(tf.fill([5], R))]
    hvd.broadcast_variables(variables, root_rank=N - 1)
    np.testing.assert_array_equal(variables[0].numpy(), value(N - 1))
    np.testing.assert_array_equal(variables[1].numpy(), np.full(5, N - 1))


@check
def graph_mode_and_broadcast_global_variables():
    with tf.Graph().as_default():
        v = tf.compat.v1.get_variable("v", initializer=tf.constant(value(R)))
        summed = hvd.allreduce(tf.constant(value(R)), op=hvd.Sum)
        sync = hvd.broadcast_global_variables(0)
        with tf.compat.v1.Session() as session:
            session.run(tf.compat.v1.global_variables_initializer())
            np.testing.assert_allclose(session.run(summed), sum(value(r) for r in range(N)))
            session.run(sync)
            np.testing.assert_array_equal(session.run(v), value(0))
    try:
        hvd.broadcast_global_variables(0)
        raise AssertionError("eager broadcast_global_variables did not raise")
    except RuntimeError:
        pass


@check
def mismatches_are_tf_errors_on_every_rank():
    if N == 1:
        return
    native = hvd_bridge_name() == "native"
    shapes = "; ".join(f"[{r + 1}] on rank {r}" for r in range(N))
    for mode in MODES:
        try:
            call(mode, lambda x: hvd.allreduce(x, name="mismatch"), tf.zeros([R + 1]))
            raise AssertionError("no error")
        except tf.errors.FailedPreconditionError as error:
            if mode == "eager":  # the message alone, without TensorFlow's wrapping
                assert str(error) == f"mismatched shapes for tensor 'mismatch': {shapes}", error
            else:  # after TensorFlow's word on where in the graph
                assert re.search(rf"(}}}} |\n)mismatched shapes for tensor '[^']*mismatch[^']*': "
                                 rf"{re.escape(shapes)}\n", str(error)), error
        except tf.errors.UnknownError as error:
            # numpy_function in a graph reports every Python error as Unknown.
            assert not native and mode != "eager" and "mismatch" in str(error), error


@check
def bad_splits_and_process_sets():
    try:
        hvd.alltoall(tf.zeros([N + 1]), splits=tf.constant([N + 5] + [0] * (N - 1)))
        raise AssertionError("no error")
    except (tf.errors.InvalidArgumentError, ValueError):
        pass
    try:
        hvd.allreduce(tf.ones(1), process_set=hvd.ProcessSet([0]))
        raise AssertionError("unregistered set accepted")
    except ValueError:
        pass
    whole = hvd.add_process_set(list(range(N)))
    np.testing.assert_allclose(hvd.allreduce(tf.ones(1), op=hvd.Sum, process_set=whole), [N])
    hvd.remove_process_set(whole)
    first = hvd.add_process_set([0])
    if R == 0:
        np.testing.assert_allclose(hvd.allreduce(tf.constant([3.0]), process_set=first), [3.0])
    else:
        try:
            hvd.allreduce(tf.ones(1), process_set=first)
            raise AssertionError("no error")
        except tf.errors.InvalidArgumentError:
            pass
    hvd.remove_process_set(first)
    try:
        hvd.allreduce(tf.ones(1), op=hvd.Adasum)
        raise AssertionError("no error")
    except NotImplementedError:
        pass


def hvd_bridge_name():
    from mpirep.tensorflow import _bridge
    return _bridge.name()


run(hvd)
