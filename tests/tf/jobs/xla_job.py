"""Collectives inside XLA-compiled functions (jit_compile=True) on the CPU, and Keras 3's
jit_compile="auto" where a GPU is listed. Run under mpirun at any number of ranks; argv[1], if
given, is where rank 0 writes a timeline of one jitted training epoch (tests/tf/test_tf.py
reads it).

Where TensorFlow's headers lack XLA's FFI (TensorFlow 2.12), the XLA kernels cannot be built:
then only the checks of the fallback run, and they check that every path names the fix."""

import os
import sys
from unittest import mock

import numpy as np
import tensorflow as tf

import mpirep.tensorflow as hvd
import mpirep.tensorflow.keras as hvd_keras
from harness import check, expect_error, run, same_on_every_rank

hvd.init()
R, N = hvd.rank(), hvd.size()
keras = tf.keras
LEGACY = os.environ.get("TF_USE_LEGACY_KERAS") == "1"
TIMELINE = sys.argv[1] if len(sys.argv) > 1 else None
XlaCollectiveError = hvd.XlaCollectiveError
# Whether this TensorFlow ships the XLA FFI headers the kernels are built against.
FFI = os.path.isfile(os.path.join(tf.sysconfig.get_include(), "xla", "ffi", "api", "ffi.h"))
FALLBACK = []


def fallback(function):
    """A check that runs also where the XLA kernels cannot be built."""
    FALLBACK.append(function.__name__)
    return check(function)


def arange(shape, dtype=np.float32):
    return np.arange(np.prod(shape), dtype=np.float64).reshape(shape).astype(dtype)


@fallback
def the_xla_kernels_load_where_tensorflow_has_the_ffi():
    from mpirep.tensorflow import _xla
    reason = _xla.unavailable_reason()
    assert (reason is None) == FFI, (reason, _xla._unavailable)


@fallback
def without_the_xla_kernels_a_jitted_collective_names_the_fix():
    if FFI:
        return
    try:
        tf.function(lambda: hvd.allreduce(tf.ones(3)), jit_compile=True)()
    except XlaCollectiveError as error:
        message = str(error)
        assert "could not be built" in message and "jit_compile=False" in message, message
    else:
        raise AssertionError("no XlaCollectiveError")


@check
def jit_compiled_before_the_first_collective():
    # The first thing after init: the XLA kernels must already be in the process.
    @tf.function(jit_compile=True)
    def total(x):
        return hvd.allreduce(x, op=hvd.Sum, name="first")

    out = total(tf.constant(arange((2, 3)) * (R + 1)))
    np.testing.assert_array_equal(out.numpy(), arange((2, 3)) * N * (N + 1) / 2)
    same_on_every_rank(hvd, out.numpy())


@check
def grouped_allreduce_of_mixed_dtypes_with_scaling():
    @tf.function(jit_compile=True)
    def reduce(a, b, c):
        return hvd.grouped_allreduce([a, b, c], op=hvd.Sum, prescale_factor=2.0,
                                     postscale_factor=0.5, name="mixed")

    a = arange((3, 4)) + R
    b = arange((5,), np.float64) * (R + 1)
    c = (arange((2, 2), np.int32) + 1) * (R + 1)
    ra, rb, rc = reduce(a, b, c)
    ranks = np.arange(N)
    np.testing.assert_array_equal(ra.numpy(), sum(arange((3, 4)) + r for r in ranks))
    np.testing.assert_array_equal(rb.numpy(), arange((5,), np.float64) * N * (N + 1) / 2)
    assert rc.dtype == tf.int32
    np.testing.assert_array_equal(rc.numpy(), (arange((2, 2), np.int32) + 1) * N * (N + 1) // 2)
    for out in (ra, rb, rc):
        same_on_every_rank(hvd, out.numpy())


@check
def average_and_broadcast():
    @tf.function(jit_compile=True)
    def both(x):
        return hvd.allreduce(x, op=hvd.Average), hvd.broadcast(x, root_rank=N - 1)

    mean, root = both(tf.constant(arange((4,)) * (R + 1)))
    np.testing.assert_allclose(mean.numpy(), arange((4,)) * (N + 1) / 2, rtol=1e-6)
    np.testing.assert_array_equal(root.numpy(), arange((4,)) * N)


@check
def rooted_reduce_under_jit():
    @tf.function(jit_compile=True)
    def onto_last(x):
        return hvd.reduce(x, root_rank=N - 1, op=hvd.Sum)

    out = onto_last(tf.constant(arange((3, 2)) * (R + 1))).numpy()
    expected = arange((3, 2)) * (N * (N + 1) / 2) if R == N - 1 else np.zeros((3, 2), np.float32)
    np.testing.assert_array_equal(out, expected)


@check
def gradient_of_allreduce_inside_a_jitted_step():
    # loss = sum(allreduce_sum(w * x_r)): its gradient in w is the allreduce of ones times x_r.
    w = tf.Variable(np.ones(4, np.float32))
    x = arange((4,)) * (R + 1)

    @tf.function(jit_compile=True)
    def gradient():
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(hvd.allreduce(w * x, op=hvd.Sum))
        return tape.gradient(loss, w)

    np.testing.assert_array_equal(gradient().numpy(), N * x)


@check
def sparse_gradient_is_reduced_dense_under_jit():
    # An embedding's gradient is IndexedSlices: row r + 1 of rank r gets all of its ones.
    table = tf.Variable(np.zeros((N + 2, 3), np.float32))
    opt = hvd.DistributedOptimizer(keras.optimizers.SGD(1.0), op=hvd.Sum)

    @tf.function(jit_compile=True)
    def step():
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(tf.gather(table, [R + 1]))
        opt.apply_gradients(zip(tape.gradient(loss, [table]), [table]))

    step()
    expected = np.zeros((N + 2, 3), np.float32)
    expected[1:N + 1] = -1.0
    np.testing.assert_array_equal(table.numpy(), expected)


@check
def process_set_under_jit():
    subset = hvd.add_process_set(list(range(0, N, 2)))  # the even ranks
    try:
        if R % 2 == 0:
            @tf.function(jit_compile=True)
            def reduce(x):
                return hvd.allreduce(x, op=hvd.Sum, process_set=subset)

            out = reduce(tf.constant(arange((3,)) * (R + 1)))
            np.testing.assert_array_equal(out.numpy(),
                                          arange((3,)) * sum(r + 1 for r in range(0, N, 2)))
    finally:
        hvd.remove_process_set(subset)


@check
def mismatched_shapes_fail_on_every_rank():
    if N == 1:
        return
    @tf.function(jit_compile=True)
    def reduce(x):
        return hvd.allreduce(x, name="mismatched")

    expect_error(tf.errors.FailedPreconditionError, lambda: reduce(tf.zeros([2 + R % 2])))


@check
def collectives_whose_shape_depends_on_other_ranks_are_refused_under_jit():
    x = tf.constant(arange((N * 2, 2)))
    for name, op in (("allgather", lambda: hvd.allgather(x)),
                     ("alltoall", lambda: hvd.alltoall(x)),
                     ("reducescatter", lambda: hvd.reducescatter(x)),
                     ("join", hvd.join)):
        try:
            tf.function(op, jit_compile=True)()
        except XlaCollectiveError as error:
            message = str(error)
            assert name in message and "jit_compile=False" in message, message
        else:
            raise AssertionError(f"{name} under jit raised nothing")


def data(samples=96, seed=7):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(samples, 8)).astype(np.float32)
    y = (x @ rng.normal(size=(8, 1)) + 0.1).astype(np.float32)
    return x[R::N], y[R::N]


def fitted(jit_compile="auto", optimizer=None, callbacks=True, epochs=2):
    """A model fitted on this rank's share of the data, from the same start on every rank."""
    keras.utils.set_random_seed(3)
    m = keras.Sequential([keras.Input((8,)), keras.layers.Dense(16, activation="tanh"),
                          keras.layers.Dense(1)])
    optimizer = optimizer or hvd.DistributedOptimizer(keras.optimizers.Adam(0.01))
    m.compile(optimizer=optimizer, loss="mse", jit_compile=jit_compile)
    x, y = data()
    m.fit(x, y, batch_size=8, epochs=epochs, verbose=0,
          callbacks=[hvd_keras.callbacks.BroadcastGlobalVariablesCallback(0)] if callbacks else [])
    return m


def weights(m):
    return np.concatenate([np.ravel(w) for w in m.get_weights()])


_plain = []


def plain_weights():
    if not _plain:
        _plain.append(weights(fitted(jit_compile=False)))
    return _plain[0]


@fallback
def fit_with_jit_compile_matches_fit_without():
    m = fitted(jit_compile=True)
    assert m.jit_compile == FFI  # without the kernels, the callback turned XLA off
    np.testing.assert_allclose(weights(m), plain_weights(), rtol=1e-5, atol=1e-6)
    same_on_every_rank(hvd, weights(m))


@fallback
def explicit_jit_without_callbacks_names_the_fix_or_trains():
    if FFI or N == 1:
        return  # fit_with_jit_compile_matches_fit_without trains; one rank reduces nothing
    try:
        fitted(jit_compile=True, callbacks=False)
    except XlaCollectiveError as error:
        assert "jit_compile=False" in str(error), str(error)
    else:
        raise AssertionError("no XlaCollectiveError")


@check
def custom_loop_with_a_jitted_tape_step_matches_the_plain_one():
    def train(jit_compile):
        keras.utils.set_random_seed(5)
        w = tf.Variable(tf.random.normal([8, 1], seed=1))
        opt = keras.optimizers.SGD(0.05)
        x, y = data()

        @tf.function(jit_compile=jit_compile)
        def step(xb, yb):
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean(tf.square(xb @ w - yb))
            tape = hvd.DistributedGradientTape(tape)
            grads = tape.gradient(loss, [w])
            opt.apply_gradients(zip(grads, [w]))
            return loss

        for i in range(0, len(x), 8):
            step(x[i:i + 8], y[i:i + 8])
        return w.numpy()

    jitted = train(True)
    np.testing.assert_allclose(jitted, train(False), rtol=1e-5, atol=1e-6)
    same_on_every_rank(hvd, jitted)


_GPU = tf.config.PhysicalDevice(name="/physical_device:GPU:0", device_type="GPU")


def gpu_listed_to_keras():
    """What Keras 3 sees on a GPU node when it resolves jit_compile="auto"."""
    listed = tf.config.list_physical_devices

    def with_gpu(device_type=None):
        return listed(device_type) + ([_GPU] if device_type in (None, "GPU") else [])

    return mock.patch.object(tf.config, "list_physical_devices", with_gpu)


def gpu_node():
    """A GPU node, to mpirep as to Keras: TensorFlow would place the step on the GPU."""
    logical = tf.config.list_logical_devices
    gpu = tf.config.LogicalDevice(name="/device:GPU:0", device_type="GPU")

    def with_gpu(device_type=None):
        return logical(device_type) + ([gpu] if device_type in (None, "GPU") else [])

    return mock.patch.object(tf.config, "list_logical_devices", with_gpu)


@check
def readme_port_trains_with_a_gpu_listed():
    if LEGACY:
        return  # tf_keras resolves no "auto": it never turns XLA on by itself
    # The README's "Port a Horovod script", as written; Keras turns XLA on, mpirep compiles
    # the allreduce on the host.
    with gpu_listed_to_keras():
        keras.utils.set_random_seed(3)
        model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(16, activation="tanh"),
                                  keras.layers.Dense(1)])
        opt = hvd_keras.DistributedOptimizer(tf.keras.optimizers.Adam(0.001 * hvd_keras.size()))
        model.compile(optimizer=opt, loss="mse")
        assert model.jit_compile
        x, y = data()
        history = model.fit(x, y, batch_size=8, epochs=3,
                            callbacks=[hvd_keras.callbacks.BroadcastGlobalVariablesCallback(0)],
                            verbose=1 if hvd_keras.rank() == 0 else 0)
        assert model.jit_compile
    losses = history.history["loss"]
    assert losses[-1] < losses[0], losses
    same_on_every_rank(hvd, weights(model))


@check
def auto_on_a_gpu_node_trains_without_xla_through_the_callbacks():
    if LEGACY:
        return
    with gpu_listed_to_keras(), gpu_node():
        m = fitted()  # jit_compile="auto", with BroadcastGlobalVariablesCallback
        assert not m.jit_compile
    # The same step as plain_weights'; at 3 ranks fusion, which may differ between runs, moves
    # the ring's segment boundaries and so the rounding of the sums.
    np.testing.assert_allclose(weights(m), plain_weights(), rtol=1e-5, atol=1e-6)
    same_on_every_rank(hvd, weights(m))


@check
def auto_on_a_gpu_node_without_callbacks_names_the_fix():
    if LEGACY or N == 1:
        return  # one rank reduces nothing: the step holds no collective
    with gpu_listed_to_keras(), gpu_node():
        try:
            fitted(callbacks=False)
        except XlaCollectiveError as error:
            message = str(error)
            assert "jit_compile=False" in message and "callbacks" in message, message
            assert "accelerator" in message, message
        else:
            raise AssertionError("no XlaCollectiveError")


@check
def timeline_of_a_jitted_epoch():
    if TIMELINE is None:
        return
    m = fitted(jit_compile=True, epochs=1)
    x, y = data()
    hvd.start_timeline(TIMELINE)
    m.fit(x, y, batch_size=8, epochs=1, verbose=0)
    hvd.stop_timeline()


run(hvd, only=None if FFI else lambda function: function.__name__ in FALLBACK)
