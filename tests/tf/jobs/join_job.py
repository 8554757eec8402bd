"""hvd.join with uneven work: ranks that have joined take part in the others' collectives
(zeros, no rows) until every rank joins; a custom training loop where ranks have different
numbers of batches, and Model.fit over uneven datasets with JoinCallback. Run under mpirun at 2 or more ranks; rank N-1 (or rank 0 in the training
loop) always joins last, because its own collectives cannot finish before the others joined.
"""

import numpy as np
import tensorflow as tf

import mpirep.tensorflow as hvd
from mpirep.tensorflow.keras import callbacks
from harness import check, expect_error, run, same_on_every_rank

hvd.init()
R, N = hvd.rank(), hvd.size()
LAST = N - 1
assert N >= 2, "join_job needs at least 2 ranks"


def value(shape=(3, 2)):
    return ((R + 1) * (np.arange(np.prod(shape)) % 5 + 1) - R).reshape(shape).astype(np.float32)


@check
def joined_ranks_contribute_zeros_and_no_rows():
    if R != LAST:
        assert int(hvd.join()) == LAST
        return
    try:  # join even when a check fails, or the other ranks would wait forever
        x = tf.constant(value())
        np.testing.assert_allclose(hvd.allreduce(x, op=hvd.Sum).numpy(), value())
        np.testing.assert_allclose(hvd.allreduce(x, op=hvd.Average).numpy(), value() / N,
                                   rtol=1e-6)
        np.testing.assert_array_equal(hvd.allgather(x).numpy(), value())
        rows = tf.constant(value((2 * N, 2)))
        # This rank's block of the sum is its own rows: the joined ranks sent zeros.
        np.testing.assert_allclose(hvd.reducescatter(rows, op=hvd.Sum).numpy(),
                                   value((2 * N, 2))[2 * R:2 * R + 2])
        np.testing.assert_array_equal(hvd.broadcast(x, root_rank=LAST).numpy(), value())
        expect_error(tf.errors.UnimplementedError, lambda: hvd.broadcast(x, root_rank=0))
        expect_error(tf.errors.UnimplementedError, lambda: hvd.alltoall(tf.zeros([N])))
        # The same inside a graph, whose ops run asynchronously.
        grouped = tf.function(lambda a, b: hvd.grouped_allreduce([a, b], op=hvd.Sum),
                              autograph=False)(x, 2 * x)
        np.testing.assert_allclose(grouped[1].numpy(), 2 * value())
    finally:
        last = int(hvd.join())
    assert last == LAST, last


@check
def join_inside_a_graph():
    @tf.function(autograph=False)
    def step_then_join(x):
        y = hvd.allreduce(x, op=hvd.Sum, name="before_join")
        with tf.control_dependencies([y]):
            return y, hvd.join()

    y, last = step_then_join(tf.constant(value()))
    np.testing.assert_allclose(y.numpy(), sum(
        ((r + 1) * (np.arange(6) % 5 + 1) - r).reshape(3, 2) for r in range(N)))
    assert 0 <= int(last) < N
    same_on_every_rank(hvd, last.numpy())


@check
def eager_names_realign_after_join():
    # Rank LAST issues two more unnamed eager ops than the others; after join every rank
    # numbers them from zero again, so the next unnamed op matches up.
    if R == LAST:
        hvd.allreduce(tf.ones(2))
        hvd.allreduce(tf.ones(2))
    hvd.join()
    got = hvd.allreduce(tf.constant([float(R)]), op=hvd.Sum)
    np.testing.assert_allclose(got.numpy(), [N * (N - 1) / 2])


def steps(r):
    """Rank 0 has the most batches and rank N-1 the fewest."""
    return 2 + (N - 1 - r)


def batch(r, k):
    return np.arange(1, 5, dtype=np.float32) * (r + 1) + k


@check
def custom_loop_with_uneven_batches():
    # loss = sum(w * x) has gradient x; the tape averages over all N ranks, joined ones
    # giving zeros, so step k moves w by -lr * sum(x of ranks still training) / N.
    lr = 0.5
    for use_optimizer in (False, True):
        w = tf.Variable(np.ones(4, np.float32))
        optimizer = hvd.DistributedOptimizer(tf.keras.optimizers.SGD(lr)) \
            if use_optimizer else None

        @tf.function
        def train_step(x):
            with tf.GradientTape() as tape:
                loss = tf.reduce_sum(w * x)
            if optimizer is None:
                tape = hvd.DistributedGradientTape(tape)
                (grad,) = tape.gradient(loss, [w])
                w.assign_sub(lr * grad)
            else:
                optimizer.apply_gradients(zip(tape.gradient(loss, [w]), [w]))
            return loss

        try:
            for k in range(steps(R)):
                train_step(tf.constant(batch(R, k)))
        finally:
            last = int(hvd.join())
        mine = np.ones(4) - lr * sum(batch(r, k) for k in range(steps(R)) for r in range(N)
                                     if k < steps(r)) / N
        np.testing.assert_allclose(w.numpy(), mine, rtol=1e-6)
        assert last == 0, last
        hvd.broadcast_variables([w], root_rank=last)
        np.testing.assert_allclose(w.numpy(), np.ones(4) - lr * sum(
            batch(r, k) for r in range(N) for k in range(steps(r))) / N, rtol=1e-6)
        same_on_every_rank(hvd, w.numpy())


@check
def fit_with_uneven_batches_and_join_callback():
    # The same closed form through Model.fit: one sample per batch, loss = sum(x @ w), and
    # JoinCallback at each epoch's end; every rank ends with the weights of the one that ran
    # the most steps, epoch after epoch.
    lr, epochs = 0.5, 2
    keras = tf.keras
    model = keras.Sequential([keras.Input((4,)),
                              keras.layers.Dense(1, use_bias=False, kernel_initializer="ones")])
    model.compile(optimizer=hvd.DistributedOptimizer(keras.optimizers.SGD(lr)),
                  loss=lambda y_true, y_pred: tf.reduce_sum(y_pred, axis=-1))
    x = np.stack([batch(R, k) for k in range(steps(R))])
    model.fit(x, np.zeros(len(x), np.float32), batch_size=1, epochs=epochs, shuffle=False,
              verbose=0, callbacks=[callbacks.JoinCallback()])
    expected = np.ones(4) - epochs * lr * sum(
        batch(r, k) for r in range(N) for k in range(steps(r))) / N
    np.testing.assert_allclose(model.get_weights()[0].ravel(), expected, rtol=1e-6)
    same_on_every_rank(hvd, model.get_weights()[0])
    same_on_every_rank(hvd, model.optimizer.iterations.numpy())


run(hvd)
