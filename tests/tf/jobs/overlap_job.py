"""Collectives that start as soon as their input exists, yet always run on every rank.

Inside a tf.function the native bridge's collectives are exempt from TensorFlow's program-order
chaining of stateful ops (mpirep/tensorflow/_graph_order.py). They must still never be folded,
merged or pruned on one rank and not on another: here ranks build graphs that differ exactly
where TensorFlow could do so on one side (a constant input, two identical collectives of one
input, a result the rank never uses), so any such rewrite leaves another rank waiting for a
collective that never comes, which the stall shutdown time turns into an error instead of a
hang. Then a training step with overlap gives the weights of one without it. Run under mpirun at
any number of ranks, with MPIREP_STALL_SHUTDOWN_TIME_SECONDS set.
"""

import numpy as np
import tensorflow as tf

import mpirep
import mpirep.tensorflow as hvd
from harness import check, run, same_on_every_rank
from mpirep.tensorflow import _bridge
from mpirep.tensorflow._graph_order import is_independent

hvd.init()
R, N = hvd.rank(), hvd.size()
EVEN = R % 2 == 0
keras = tf.keras


def value(r, shape=(4, 3), dtype=np.float32):
    return ((r + 1) * (np.arange(np.prod(shape)) % 5 + 1) - r).reshape(shape).astype(dtype)


def in_function(fn):
    return tf.function(fn, autograph=False)()


def in_session(fn):
    """fn() built in a tf.compat.v1 graph and run in a session, grappler on (its default)."""
    with tf.Graph().as_default(), tf.compat.v1.Session() as session:
        return session.run(fn())


RUNNERS = {"tf.function": in_function, "session": in_session}


@check
def constant_inputs_are_not_folded():
    want = sum(value(r) for r in range(N))
    for name, runner in RUNNERS.items():
        got = runner(lambda: hvd.allreduce(tf.constant(value(R)), op=hvd.Sum))
        np.testing.assert_array_equal(np.asarray(got), want, err_msg=name)
        same_on_every_rank(hvd, got)


@check
def identical_collectives_are_not_merged():
    """Even ranks reduce one constant twice with the same attributes (what CSE merges); odd
    ranks reduce two different constants, so neither of their collectives can be merged."""
    def first(r):
        return value(r)

    def second(r):
        return value(r) if r % 2 == 0 else 2 * value(r)

    def build():
        if EVEN:
            x = tf.constant(first(R))
            return hvd.allreduce(x, op=hvd.Sum), hvd.allreduce(x, op=hvd.Sum)
        return (hvd.allreduce(tf.constant(first(R)), op=hvd.Sum),
                hvd.allreduce(tf.constant(second(R)), op=hvd.Sum))

    for name, runner in RUNNERS.items():
        a, b = runner(build)
        np.testing.assert_array_equal(np.asarray(a), sum(first(r) for r in range(N)), name)
        np.testing.assert_array_equal(np.asarray(b), sum(second(r) for r in range(N)), name)


@check
def results_a_rank_does_not_use_still_run():
    """Even ranks use nothing of a collective's result: in a session only its size, which
    grappler folds to a constant from the static shape (the raw op: Python's tf.size would
    fold it already, and a session runs nothing that its fetches do not depend on); in a
    tf.function nothing at all. Odd ranks use the values. Afterwards every rank takes part in
    one more collective."""
    x = value(R, dtype=np.int32)

    def build_for_session():
        y = hvd.allreduce(tf.constant(x), op=hvd.Sum)
        return tf.raw_ops.Size(input=y) if EVEN else y

    def build_for_function():
        y = hvd.allreduce(tf.constant(x), op=hvd.Sum)
        return tf.constant(7) if EVEN else y

    for name, (runner, build) in {"session": (in_session, build_for_session),
                                  "tf.function": (in_function, build_for_function)}.items():
        got = np.asarray(runner(build))
        if EVEN:
            assert got.tolist() in (x.size, 7), (name, got)
        else:
            np.testing.assert_array_equal(got, sum(value(r, dtype=np.int32) for r in range(N)))
        after = hvd.allreduce(tf.constant([R + 1.0]), op=hvd.Sum, name=f"after.{name}")
        assert after.numpy().tolist() == [N * (N + 1) / 2], (name, after)


def tiny_model(seed):
    keras.utils.set_random_seed(seed)
    return keras.Sequential([keras.Input((6,)), keras.layers.Dense(16, activation="tanh"),
                             keras.layers.Dense(8, activation="tanh"), keras.layers.Dense(2)])


def rank_batches(steps, batch=8):
    rng = np.random.default_rng(100 + R)
    x = rng.normal(size=(steps, batch, 6)).astype(np.float32)
    y = rng.normal(size=(steps, batch, 2)).astype(np.float32)
    return x, y


def loss_of(model, x, y):
    return tf.reduce_mean(tf.square(model(x, training=True) - y))


@check
def collectives_of_a_traced_step_are_not_chained():
    """Every gradient's allreduce depends on its gradient alone (by default) or on its group's
    gradients (num_groups), never on another collective; each stays a control output of the
    function, so it runs whether or not its result is used."""
    if _bridge.name() != "native":
        return  # the numpy bridge keeps program order on purpose (_graph_order.py)
    model = tiny_model(1)
    x, y = (t[0] for t in rank_batches(1))
    for num_groups in (0, 2):
        @tf.function
        def step(xb, yb):
            with tf.GradientTape() as tape:
                loss = loss_of(model, xb, yb)
            tape = hvd.DistributedGradientTape(tape, num_groups=num_groups)
            return tape.gradient(loss, model.trainable_variables)

        graph = step.get_concrete_function(x, y).graph
        # in variable order, which is the order the reducer issues them in
        collectives = [op for op in graph.get_operations() if op.type == "MpirepCollective"]
        if N == 1:  # one rank has nothing to reduce, so the step holds no collective
            assert not collectives, collectives
            continue
        assert len(collectives) == len(model.trainable_variables), collectives
        group = len(collectives) // num_groups if num_groups else 1
        outputs = set(graph.control_outputs)
        for i, op in enumerate(collectives):
            assert is_independent(op) and op in outputs, op.name
            before = upstream(op)
            assert not any(o.type == "MpirepCollective" for o in before), (num_groups, op.name)
            first = i - i % group
            members = {c.inputs[0].op for c in collectives[first:first + group]}
            others = {c.inputs[0].op for c in collectives} - members
            assert members <= before and not others & before, (num_groups, op.name)


def upstream(op):
    """Every op that ``op`` waits for, through data and control edges."""
    seen, stack = set(), list(op.control_inputs) + [t.op for t in op.inputs]
    while stack:
        current = stack.pop()
        if current not in seen:
            seen.add(current)
            stack.extend(list(current.control_inputs) + [t.op for t in current.inputs])
    return seen


def trained_with_tape(x, y, num_groups=None):
    """Five SGD steps from the same start. With ``num_groups`` a DistributedGradientTape
    reduces inside the tf.function; without, the tf.function returns local gradients, which are
    averaged after backprop through the numpy API (no overlap)."""
    model = tiny_model(7)
    optimizer = keras.optimizers.SGD(0.1)

    @tf.function
    def gradients(xb, yb):
        with tf.GradientTape() as tape:
            loss = loss_of(model, xb, yb)
        if num_groups is not None:
            tape = hvd.DistributedGradientTape(tape, num_groups=num_groups)
        return tape.gradient(loss, model.trainable_variables)

    for xb, yb in zip(x, y):
        grads = gradients(xb, yb)
        if num_groups is None:
            grads = [mpirep.allreduce(g.numpy(), op=mpirep.Average, name=f"reference.{i}")
                     for i, g in enumerate(grads)]
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
    return model


def trained_with_fit(num_groups, x, y):
    model = tiny_model(7)
    model.compile(optimizer=hvd.DistributedOptimizer(keras.optimizers.SGD(0.1),
                                                     num_groups=num_groups), loss="mse")
    model.fit(x.reshape(-1, 6), y.reshape(-1, 2), batch_size=x.shape[1], epochs=1,
              shuffle=False, verbose=0)
    return model


def flat(model):
    return np.concatenate([np.ravel(w) for w in model.get_weights()])


@check
def a_step_with_overlap_gives_the_weights_of_one_without():
    """Five steps: overlapping (the default, one op per gradient), one group submitted after
    backprop (num_groups=1), and the reference; weights bit-identical on every rank, and equal
    to the reference within the tolerance of reduction order (fusion changes which rank sums
    which element, and in what order)."""
    x, y = rank_batches(5)
    reference = flat(trained_with_tape(x, y))
    for label, weights in {"tape": flat(trained_with_tape(x, y, num_groups=0)),
                           "tape, one group": flat(trained_with_tape(x, y, num_groups=1)),
                           "fit": flat(trained_with_fit(0, x, y)),
                           "fit, one group": flat(trained_with_fit(1, x, y))}.items():
        same_on_every_rank(hvd, weights)
        np.testing.assert_allclose(weights, reference, rtol=1e-5, atol=1e-6, err_msg=label)


run(hvd)
