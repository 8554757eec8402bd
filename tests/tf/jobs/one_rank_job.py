"""A set of one rank reduces no gradient: at one rank DistributedOptimizer (Model.fit, a
tf.function loop, accumulation, a TF1 session), DistributedGradientTape and the Replicator's
wrap_optimizer trace no collective for gradients and train bit for bit as plain TensorFlow,
compression and predivision included; so does a tape on a one-rank process set at any size.
At more ranks the same steps still reduce every gradient. Keras 3, or tf_keras when
TF_USE_LEGACY_KERAS=1. Run under mpirun at any number of ranks."""

import numpy as np
import tensorflow as tf

import mpirep.tensorflow as hvd
from harness import check, run, same_on_every_rank
from mpirep.replicator import Replicator

hvd.init()
R, N = hvd.rank(), hvd.size()
keras = tf.keras
# Options that change gradients on their way through a collective: fp16 compression rounds
# them, and dividing by 3 before the sum and multiplying after is not exact in float32.
LOSSY = dict(compression=hvd.Compression.fp16, gradient_predivide_factor=3.0)


def collectives_in(graph):
    """The names of the mpirep collectives in a traced graph and in the functions it holds
    (a tf.cond's branches)."""
    graph_def = graph.as_graph_def()
    nodes = list(graph_def.node) + [n for f in graph_def.library.function for n in f.node_def]
    return [n.name for n in nodes if n.op == "MpirepCollective"]


def data(seed=4, samples=48):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(samples, 6)).astype(np.float32)
    return x, (x @ rng.normal(size=(6, 2))).astype(np.float32)


class Recording(keras.Sequential):
    """A Sequential that keeps the graph in which Keras traces its train step."""

    traced = None

    def train_step(self, batch):
        self.traced = tf.compat.v1.get_default_graph()
        return super().train_step(batch)


def model(cls=keras.Sequential):
    keras.utils.set_random_seed(9)
    return cls([keras.Input((6,)), keras.layers.Dense(5, activation="tanh"),
                keras.layers.Dense(2)])


def flat(values):
    return np.concatenate([np.ravel(np.asarray(v)) for v in values])


def assert_plain(got, want, graph, label):
    """At one rank: bit for bit the plain values, and no collective traced. At more, the graph
    still has collectives."""
    found = collectives_in(graph)
    if N == 1:
        assert found == [], (label, found)
        assert got.dtype == want.dtype and got.tobytes() == want.tobytes(), \
            (label, np.max(np.abs(got - want)))
    else:
        assert found, label
    same_on_every_rank(hvd, got)


@check
def collectives_in_finds_a_collective():
    """The inspection itself: an explicit allreduce in a tf.function is found at any size."""
    graph = tf.function(lambda: hvd.allreduce(tf.ones(3))).get_concrete_function().graph
    assert len(collectives_in(graph)) == 1, collectives_in(graph)


@check
def fit_trains_as_plain_keras():
    x, y = data()
    for options in ({}, LOSSY):
        fitted = {}
        for distributed in (False, True):
            m = model(Recording)
            optimizer = keras.optimizers.Adam(0.01)
            if distributed:
                optimizer = hvd.DistributedOptimizer(optimizer, **options)
            m.compile(optimizer=optimizer, loss="mse")
            m.fit(x, y, batch_size=8, epochs=2, shuffle=False, verbose=0)
            fitted[distributed] = m
        graph = fitted[True].traced
        assert_plain(flat(fitted[True].get_weights()), flat(fitted[False].get_weights()),
                     graph, f"fit {options}")
        if N > 1:  # one allreduce per gradient, as before
            assert len(collectives_in(graph)) == len(fitted[True].trainable_variables)


@check
def accumulation_applies_every_second_pass():
    """backward_passes_per_step=2, averaged, in a tf.function: passes 1 and 3 leave w alone,
    2 and 4 apply the mean of their two gradients, averaged over ranks; the loss sum(w * g)
    has gradient g, of small integers, so every value is exact at one rank."""
    grads = [np.array([1.0, -2.0, 3.0, 0.5], np.float32) * (k + 1) * (R + 1) for k in range(4)]
    w = tf.Variable(np.full(4, 10.0, np.float32))
    optimizer = hvd.DistributedOptimizer(keras.optimizers.SGD(1.0), backward_passes_per_step=2,
                                         average_aggregated_gradients=True)

    @tf.function
    def step(g):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(w * g)
        optimizer.apply_gradients(zip(tape.gradient(loss, [w]), [w]))

    rank_mean = sum(r + 1 for r in range(N)) / N
    want = np.full(4, 10.0, np.float32)
    for k, g in enumerate(grads):
        step(tf.constant(g))
        if k % 2 == 1:
            want = want - (grads[k - 1] + g) / 2 / (R + 1) * rank_mean
        np.testing.assert_allclose(w.numpy(), want, rtol=0 if N == 1 else 1e-6, err_msg=k)
    assert int(optimizer.iterations.numpy()) == 4
    graph = step.get_concrete_function(tf.constant(grads[0])).graph
    assert_plain(w.numpy(), want, graph, "accumulation")


def tape_step(variables, loss_fn, distributed=True, **options):
    """A tf.function returning the gradients of loss_fn(), through a DistributedGradientTape
    with ``options`` if ``distributed``."""
    @tf.function
    def step():
        with tf.GradientTape() as tape:
            loss = loss_fn()
        if distributed:
            tape = hvd.DistributedGradientTape(tape, **options)
        return tape.gradient(loss, variables)

    return step


@check
def tape_returns_plain_gradients():
    x, y = data(seed=5 + R)
    m = model()
    m.build((None, 6))

    def loss():
        return tf.reduce_mean(tf.square(m(x) - y))

    plain = flat(tape_step(m.trainable_variables, loss, distributed=False)())
    for options in ({}, LOSSY):
        step = tape_step(m.trainable_variables, loss, **options)
        got = flat(step())
        graph = step.get_concrete_function().graph
        if N == 1:
            assert_plain(got, plain, graph, f"tape {options}")
        else:
            assert len(collectives_in(graph)) == len(m.trainable_variables), options


@check
def sparse_gradient_stays_sparse_at_one_rank():
    """An embedding's gradient is a tf.IndexedSlices: at one rank it comes back as it is, even
    with sparse_as_dense (nothing to gain from densifying it); at more ranks it is densified
    and allreduced."""
    table = tf.Variable(np.arange(12, dtype=np.float32).reshape(6, 2))
    ids = tf.constant([4, 1, 4])

    def loss():
        return tf.reduce_sum(tf.gather(table, ids) * 1.5)

    step = tape_step([table], loss, sparse_as_dense=True)
    (grad,) = step()
    graph = step.get_concrete_function().graph
    if N == 1:
        assert isinstance(grad, tf.IndexedSlices), type(grad)
        assert grad.indices.numpy().tolist() == [4, 1, 4]
        assert_plain(grad.values.numpy(), np.full((3, 2), 1.5, np.float32), graph, "sparse")
    else:
        assert not isinstance(grad, tf.IndexedSlices), type(grad)
        want = np.zeros((6, 2), np.float32)
        want[4], want[1] = 3.0, 1.5
        np.testing.assert_array_equal(grad.numpy(), want)
        assert len(collectives_in(graph)) == 1


@check
def tape_on_a_one_rank_process_set_returns_plain_gradients():
    singletons = [hvd.add_process_set([r]) for r in range(N)]
    try:
        w = tf.Variable(np.linspace(-1.0, 2.0, 5).astype(np.float32))
        x = tf.constant(np.linspace(0.3, 1.7, 5).astype(np.float32) * (R + 1))

        def loss():
            return tf.reduce_sum(tf.sin(w * x))

        plain = flat(tape_step([w], loss, distributed=False)())
        step = tape_step([w], loss, process_set=singletons[R], **LOSSY)
        got = flat(step())
        found = collectives_in(step.get_concrete_function().graph)
        assert found == [] and got.tobytes() == plain.tobytes(), found
    finally:
        for process_set in singletons:
            hvd.remove_process_set(process_set)


@check
def tf1_session_trains_as_plain():
    x, y = data(seed=6)

    def train(distributed):
        with tf.Graph().as_default() as graph, tf.compat.v1.Session() as session:
            w = tf.compat.v1.get_variable("w", initializer=np.full((6, 2), 0.1, np.float32))
            loss = tf.reduce_mean(tf.square(tf.matmul(x, w) - y))
            optimizer = tf.compat.v1.train.GradientDescentOptimizer(0.05)
            if distributed:
                optimizer = hvd.DistributedOptimizer(optimizer, **LOSSY)
            train_op = optimizer.minimize(loss)
            session.run(tf.compat.v1.global_variables_initializer())
            for _ in range(3):
                session.run(train_op)
            return session.run(w), graph

    plain, _ = train(False)
    got, graph = train(True)
    assert_plain(got, plain, graph, "tf1")


@check
def replicator_trains_as_plain():
    x, y = data(seed=8)
    trained = {}
    for wrapped in (False, True):
        replicator = Replicator()
        with replicator.context():
            m = model()
            optimizer = keras.optimizers.SGD(0.1)
            if wrapped:
                optimizer = replicator.wrap_optimizer(optimizer)

        def step():
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean(tf.square(m(x) - y))
            grads = tape.gradient(loss, m.trainable_variables)
            optimizer.apply_gradients(zip(grads, m.trainable_variables))

        train = tf.function(lambda: replicator.run(step))
        for _ in range(3):
            train()
        trained[wrapped] = flat(m.get_weights())
    assert_plain(trained[True], trained[False], train.get_concrete_function().graph,
                 "replicator")


run(hvd)
