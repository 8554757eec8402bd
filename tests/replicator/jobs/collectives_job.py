"""Replicator collectives, variables, input and checkpoints against closed forms. Run under
mpirun at any number of ranks; tests/tf/jobs/harness.py gathers the failures."""

import os
import tempfile

import numpy as np
import tensorflow as tf

import mpirep.tensorflow as hvd
from harness import check, run, same_on_every_rank
from mpirep.replicator import InputContext, Replicator

keras = tf.keras
repl = Replicator()
R, N = repl.replica_id, repl.num_replicas
WEIGHTS = [r + 2.0 for r in range(N)]  # replica r weighs its loss by r + 2


def value(r, rows=3, cols=2):
    """Replica- and index-dependent, never constant."""
    return ((r + 1) * (np.arange(rows * cols) % 5 + 1) - r).reshape(rows, cols).astype(np.float32)


def value_and_grad(op, x):
    """op(x) and d sum(op(x) * (R + 2) * index) / dx, in a tf.function."""
    @tf.function
    def fn(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = repl.run(op, args=(x,))
            index = tf.reshape(tf.range(1.0, tf.cast(tf.size(y), tf.float32) + 1), tf.shape(y))
            loss = tf.reduce_sum(y * (R + 2.0) * index)
        return y, tape.gradient(loss, x)

    y, g = fn(tf.constant(x))
    return y.numpy(), g.numpy()


def index(shape):
    return np.arange(1.0, np.prod(shape) + 1, dtype=np.float32).reshape(shape)


@check
def all_reduce_sum_mean_max_with_gradients():
    everyone = np.stack([value(r) for r in range(N)])
    for op, want, grad_scale in (("sum", everyone.sum(0), 1.0),
                                 ("mean", everyone.mean(0), 1.0 / N)):
        y, g = value_and_grad(lambda x: repl.all_reduce(x, op), value(R))
        np.testing.assert_allclose(y, want, rtol=1e-6)
        np.testing.assert_allclose(g, sum(WEIGHTS) * grad_scale * index(y.shape), rtol=1e-6)
        same_on_every_rank(hvd, y)
    np.testing.assert_array_equal(repl.all_reduce(value(R), "max").numpy(), everyone.max(0))
    np.testing.assert_array_equal(
        repl.all_reduce(value(R), tf.distribute.ReduceOp.SUM).numpy(), everyone.sum(0))


@check
def all_reduce_nested_structure():
    got = repl.all_reduce({"a": tf.constant(float(R)), "b": [tf.constant([R, 1])]}, "sum")
    assert float(got["a"]) == N * (N - 1) / 2
    np.testing.assert_array_equal(got["b"][0].numpy(), [N * (N - 1) // 2, N])


@check
def broadcast_from_every_root_with_gradient():
    for root in range(N):
        y, g = value_and_grad(lambda x: repl.broadcast(x, root), value(R))
        np.testing.assert_array_equal(y, value(root))
        want = sum(WEIGHTS) * index(y.shape) if R == root else np.zeros_like(y)
        np.testing.assert_allclose(g, want, rtol=1e-6)


@check
def all_gather_uneven_rows_with_gradient():
    rows = [r + 1 for r in range(N)]
    y, g = value_and_grad(repl.all_gather, value(R, rows=rows[R]))
    np.testing.assert_array_equal(y, np.concatenate([value(r, rows=rows[r]) for r in range(N)]))
    start = sum(rows[:R])
    np.testing.assert_allclose(g, sum(WEIGHTS) * index(y.shape)[start:start + rows[R]],
                               rtol=1e-6)


@check
def all_gather_along_axis_one():
    got = repl.all_gather(value(R), axis=1).numpy()
    np.testing.assert_array_equal(got, np.concatenate([value(r) for r in range(N)], axis=1))


@check
def moments_are_the_global_batch_statistics_with_gradients():
    # Replicas hold batches of different sizes; the statistics are those of their concatenation.
    batches = [value(r, rows=2 * r + 2, cols=3) for r in range(N)]
    everyone = np.concatenate(batches)
    weight_mean, weight_var = tf.constant([1.0, -2.0, 3.0]), tf.constant([0.5, 1.5, -1.0])

    def objective(mean, variance):
        return tf.reduce_sum(weight_mean * mean + weight_var * variance)

    @tf.function
    def distributed(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            mean, variance = repl.run(repl.moments, args=(x, [0]))
            loss = (R + 2.0) * objective(mean, variance)
        return mean, variance, tape.gradient(loss, x)

    mean, variance, grad = distributed(tf.constant(batches[R]))
    np.testing.assert_allclose(mean.numpy(), everyone.mean(0), rtol=1e-6)
    np.testing.assert_allclose(variance.numpy(), everyone.var(0), rtol=1e-5)
    x = tf.constant(everyone)
    with tf.GradientTape() as tape:  # the same objective on the whole batch in one process
        tape.watch(x)
        loss = objective(*tf.nn.moments(x, [0]))
    # Every replica's loss depends on every replica's rows, so x's gradient sums all their
    # losses' gradients, as allreduce's gradient does.
    start = sum(len(b) for b in batches[:R])
    want = sum(WEIGHTS) * tape.gradient(loss, x).numpy()[start:start + len(batches[R])]
    np.testing.assert_allclose(grad.numpy(), want, rtol=1e-5, atol=1e-5)


@check
def reduce_and_gather_report_every_replica():
    assert float(repl.reduce("mean", tf.constant(float(R)))) == (N - 1) / 2
    assert float(repl.reduce("sum", float(R))) == N * (N - 1) / 2
    np.testing.assert_array_equal(repl.gather(tf.constant([R, R])).numpy(),
                                  np.repeat(np.arange(N), 2))


def flat(variables):
    return np.concatenate([np.ravel(v.numpy()) for v in variables])


@check
def context_variables_take_the_chiefs_values_before_the_first_step():
    with repl.context():
        keras.utils.set_random_seed(10 + R)  # a different start on every replica
        model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3),
                                  keras.layers.Dense(2)])
        extra = tf.Variable(tf.random.normal([5], seed=R))
    variables = model.variables + [extra]
    before = flat(variables)
    chiefs = hvd.broadcast_object(before, root_rank=0)
    if N > 1:
        assert not np.array_equal(chiefs, hvd.broadcast_object(before, root_rank=1))
    seen = repl.run(lambda: flat(variables))  # what the first step sees
    np.testing.assert_array_equal(seen, chiefs)
    same_on_every_rank(hvd, seen)


@check
def variables_a_step_creates_start_from_the_chief():
    for mode in ("eager", "function"):
        keras.utils.set_random_seed(20 + R)
        model = keras.Sequential([keras.layers.Dense(3), keras.layers.Dense(1)])  # built lazily
        x = tf.constant(value(0, rows=2, cols=4))
        y = repl.run(model if mode == "eager" else tf.function(model), args=(x,))
        same_on_every_rank(hvd, y.numpy())  # identical already in the step that built them
        same_on_every_rank(hvd, flat(model.variables))


def elements(batches):
    return [batch.numpy().tolist() for batch in batches]


@check
def distributed_dataset_shards_are_disjoint_and_cover_whole_global_batches():
    per_replica = 2
    global_batch = per_replica * N
    for size in (6 * N, 6 * N + 1, 6 * N + N + 1, 7, 1):
        for name, dataset in (("range", tf.data.Dataset.range(size)),
                              ("filtered", tf.data.Dataset.range(size).filter(lambda i: i >= 0))):
            mine = elements(repl.distribute_dataset(dataset, global_batch))
            everyone = hvd.allgather_object(mine)
            steps = size // global_batch  # what one process with drop_remainder takes
            assert [len(batches) for batches in everyone] == [steps] * N, (name, size, everyone)
            for k in range(steps):
                step = sorted(i for batches in everyone for i in batches[k])
                assert step == list(range(k * global_batch, (k + 1) * global_batch)), step
            assert all(len(b) == per_replica for batches in everyone for b in batches)


@check
def uneven_shards_end_together():
    # 3N + 1 elements: replica 0 could make one more batch than the others. If it did, its
    # extra step's all_reduce would wait for ever (the job's timeout would fail this test).
    batches = repl.distribute_dataset(tf.data.Dataset.range(3 * N + 1), N)
    step = tf.function(lambda batch: repl.all_reduce(tf.reduce_sum(batch), "sum"))
    totals = [int(repl.run(step, args=(batch,))) for batch in batches]
    steps = (3 * N + 1) // N
    assert totals == [sum(range(k * N, (k + 1) * N)) for k in range(steps)], totals
    infinite = repl.distribute_dataset(tf.data.Dataset.range(5).repeat(), N)
    assert infinite.cardinality() == tf.data.INFINITE_CARDINALITY


@check
def input_fn_feeds_successive_batches_eagerly_and_in_a_function():
    contexts = []

    def input_fn(context):
        contexts.append(context)
        batch = context.per_replica_batch_size(2 * N)
        return tf.data.Dataset.range(100).shard(context.num_replicas, context.replica_id).batch(
            batch)

    eager = [repl.run(lambda b: b, input_fn).numpy().tolist() for _ in range(2)]
    in_function = tf.function(lambda: repl.run(lambda b: b + 0, input_fn))
    later = [in_function().numpy().tolist() for _ in range(2)]
    assert len(contexts) == 1 and contexts[0].num_replicas == N and contexts[0].replica_id == R
    assert eager + later == [[R + N * (2 * k + j) for j in range(2)] for k in range(4)], (
        eager, later)
    if N > 1:
        try:
            InputContext(N, R).per_replica_batch_size(2 * N + 1)
            raise AssertionError("an indivisible global batch was accepted")
        except ValueError:
            pass


@check
def the_chief_alone_writes_checkpoints():
    directory = hvd.broadcast_object(tempfile.mkdtemp() if repl.is_chief else None)
    variable = tf.Variable(np.arange(3.0) + R)
    checkpoint = tf.train.Checkpoint(v=variable)
    path = repl.save(checkpoint, os.path.join(directory, "ckpt"))
    assert int(checkpoint.save_counter) == (1 if repl.is_chief else 0)
    same_on_every_rank(hvd, np.frombuffer(path.encode(), np.uint8))
    restored = tf.Variable(np.zeros(3))
    tf.train.Checkpoint(v=restored).read(path).assert_existing_objects_matched()
    np.testing.assert_array_equal(restored.numpy(), np.arange(3.0))


run(hvd)
repl.shutdown()
