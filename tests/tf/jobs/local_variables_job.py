"""Horovod's training features beyond plain averaging, against closed forms: variables that
stay local to a rank (model-parallel layers) in tapes, optimizers and the broadcast callback;
the optimizer's compute_gradients, alone and with backward_passes_per_step; TF1
tf.compat.v1.train optimizers in a graph; the broadcast callback on a model built lazily; the
Keras helpers returning tensors. Keras 3, or tf_keras when TF_USE_LEGACY_KERAS=1. Run under
mpirun at any number of ranks."""

import numpy as np
import tensorflow as tf

import mpirep.tensorflow as hvd_tf
import mpirep.tensorflow.keras as hvd
from harness import check, run, same_on_every_rank

hvd.init()
R, N = hvd.rank(), hvd.size()
keras = tf.keras


def shared_input(r):
    return np.array([1.0, 2.0, 3.0], np.float32) * (r + 1)


def local_input(r):
    return np.array([4.0, 5.0], np.float32) * (r + 1)


MEAN_SHARED = sum(shared_input(r) for r in range(N)) / N


def linear_loss(shared, local):
    # d/d shared = shared_input(R), d/d local = local_input(R)
    return tf.reduce_sum(shared * shared_input(R)) + tf.reduce_sum(local * local_input(R))


@check
def tape_keeps_local_sources_local():
    for mode, scale in (("eager", True), ("function", True), ("eager", False)):
        shared, local = tf.Variable(np.zeros(3, np.float32)), tf.Variable(np.zeros(2, np.float32))

        def grads():
            with tf.GradientTape() as tape:
                loss = linear_loss(shared, local)
            tape = hvd.DistributedGradientTape(tape, scale_local_gradients=scale)
            tape.register_local_source(local)
            return tape.gradient(loss, [shared, local])

        g_shared, g_local = grads() if mode == "eager" else tf.function(grads)()
        np.testing.assert_array_equal(g_shared.numpy(), MEAN_SHARED)
        # Horovod divides a local gradient by the set's size unless told not to.
        np.testing.assert_array_equal(g_local.numpy(), local_input(R) / (N if scale else 1))


@check
def partial_tape_and_its_split_of_the_gradients():
    dense = keras.layers.Dense(2, use_bias=False,
                               kernel_initializer=keras.initializers.Constant(R + 1.0))
    dense.build((None, 3))
    shared = tf.Variable(np.zeros(3, np.float32))
    x = tf.constant([[1.0, 2.0, 3.0]])
    with tf.GradientTape(persistent=True) as tape:
        loss = tf.reduce_sum(dense(x)) + tf.reduce_sum(shared * shared_input(R))
    tape = hvd_tf.PartialDistributedGradientTape(tape, local_layers=dense)
    kernel = dense.trainable_weights[0]
    local, shared_pairs = tape.get_local_and_global_gradients(loss, [shared, kernel])
    assert [v is kernel for v, _ in local] == [True]
    assert [v is shared for v, _ in shared_pairs] == [True]
    # d loss / d kernel[i, j] = x[i], on every rank alike: divided by N as a local gradient.
    x_column = np.array([[1.0], [2.0], [3.0]], np.float32)
    np.testing.assert_array_equal(local[0][1].numpy(), np.repeat(x_column, 2, 1) / N)
    np.testing.assert_array_equal(shared_pairs[0][1].numpy(), MEAN_SHARED)


@check
def local_embedding_gradient_in_a_function():
    # Each rank's embedding row R + 1 stays local: its IndexedSlices gradient is divided by N.
    table = tf.Variable(np.zeros((N + 1, 2), np.float32))

    @tf.function
    def grads():
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(tf.gather(table, [R + 1]) * (R + 1.0))
        tape = hvd.DistributedGradientTape(tape)
        tape.register_local_source(table)
        return tape.gradient(loss, [table])[0]

    grad = grads()
    assert isinstance(grad, tf.IndexedSlices)
    np.testing.assert_array_equal(tf.convert_to_tensor(grad).numpy()[R + 1],
                                  np.full(2, (R + 1.0) / N, np.float32))


@check
def partial_optimizer_through_compute_gradients():
    # Horovod's flow: compute_gradients reduces, apply_gradients applies without reducing
    # again (a second pass would divide the local gradient by N once more).
    dense = keras.layers.Dense(2, use_bias=False, kernel_initializer="zeros")
    dense.build((None, 2))
    shared = tf.Variable(np.zeros(3, np.float32))
    opt = hvd.PartialDistributedOptimizer(keras.optimizers.SGD(1.0), local_layers=[dense])
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(shared * shared_input(R)) + tf.reduce_sum(
            dense(tf.constant([local_input(R)])))
    grads_and_vars = opt.compute_gradients(loss, [shared, dense.kernel], tape=tape)
    opt.apply_gradients(grads_and_vars)
    np.testing.assert_allclose(shared.numpy(), -MEAN_SHARED, rtol=1e-6)
    np.testing.assert_allclose(dense.kernel.numpy(), -np.repeat(local_input(R)[:, None], 2, 1) / N,
                               rtol=1e-6)


@check
def accumulation_counts_every_pass():
    # Three passes, two per update, gradients averaged over the passes: one update of
    # -mean_r shared_input(r); Horovod's counter holds the one pass since, and iterations
    # counts all three.
    shared = tf.Variable(np.zeros(3, np.float32))
    opt = hvd.DistributedOptimizer(keras.optimizers.SGD(1.0), backward_passes_per_step=2,
                                   average_aggregated_gradients=True)

    @tf.function
    def step():
        grads_and_vars = opt._compute_gradients(
            lambda: tf.reduce_sum(shared * shared_input(R)), var_list=[shared])
        opt.apply_gradients(grads_and_vars)

    for _ in range(3):
        step()
    np.testing.assert_allclose(shared.numpy(), -MEAN_SHARED, rtol=1e-6)
    assert int(opt._agg_helper.counter.numpy()) == 1
    assert int(opt.iterations.numpy()) == 3


@check
def tf1_optimizer_in_a_graph_with_accumulation():
    for passes, average in ((1, False), (2, False), (2, True)):
        with tf.Graph().as_default(), tf.compat.v1.Session() as session:
            shared = tf.compat.v1.Variable(np.zeros(3, np.float32))
            step = tf.compat.v1.train.get_or_create_global_step()
            opt = hvd_tf.DistributedOptimizer(
                tf.compat.v1.train.GradientDescentOptimizer(1.0),
                backward_passes_per_step=passes, average_aggregated_gradients=average)
            train = opt.minimize(tf.reduce_sum(shared * shared_input(R)), global_step=step)
            session.run(tf.compat.v1.global_variables_initializer())
            for _ in range(4):
                session.run(train)
            updates, per_update = 4 // passes, (1 if average else passes)
            np.testing.assert_allclose(session.run(shared), -updates * per_update * MEAN_SHARED,
                                       rtol=1e-6)
            assert session.run(step) == 4, (passes, average, session.run(step))


@check
def broadcast_callback_keeps_local_variables():
    m = keras.Sequential([keras.Input((3,)),
                          keras.layers.Dense(2, kernel_initializer=keras.initializers.Constant(R)),
                          keras.layers.Dense(1, kernel_initializer=keras.initializers.Constant(R))])
    local = m.layers[0].variables
    callback = hvd.callbacks.BroadcastGlobalVariablesCallback(N - 1, local_variables=local)
    callback.set_model(m)
    callback.on_train_begin()
    np.testing.assert_array_equal(m.layers[0].kernel.numpy(), np.full((3, 2), R, np.float32))
    np.testing.assert_array_equal(m.layers[1].kernel.numpy(), np.full((2, 1), N - 1, np.float32))


@check
def broadcast_callback_on_a_model_built_lazily():
    keras.utils.set_random_seed(800 + R)
    m = keras.Sequential([keras.layers.Dense(4), keras.layers.Dense(1)])  # no input shape
    m.compile(optimizer=hvd.DistributedOptimizer(keras.optimizers.SGD(0.0)), loss="mse")
    x = np.ones((8, 3), np.float32)
    m.fit(x, x[:, :1], batch_size=4, epochs=1, verbose=0,
          callbacks=[hvd.callbacks.BroadcastGlobalVariablesCallback(0)])
    same_on_every_rank(hvd, np.concatenate([np.ravel(w) for w in m.get_weights()]))


@check
def keras_helpers_return_tensors():
    summed = hvd.allreduce(np.arange(3.0) * (R + 1), op=hvd.Sum)
    gathered = hvd.allgather(np.full((1, 2), R))
    root = hvd.broadcast(np.full(2, R), root_rank=N - 1)
    block = hvd.reducescatter(np.arange(2.0 * N) * (R + 1), op=hvd.Sum)
    for result in (summed, gathered, root, block):
        assert isinstance(result, tf.Tensor), type(result)
    np.testing.assert_array_equal(summed.numpy(), np.arange(3.0) * N * (N + 1) / 2)
    np.testing.assert_array_equal(gathered.numpy(), np.repeat(np.arange(N)[:, None], 2, 1))
    np.testing.assert_array_equal(root.numpy(), [N - 1, N - 1])
    np.testing.assert_array_equal(block.numpy(), np.arange(2.0 * R, 2.0 * R + 2) * N * (N + 1) / 2)


run(hvd)
