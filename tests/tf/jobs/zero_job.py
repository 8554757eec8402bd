"""ZeroRedundancyOptimizer against DistributedOptimizer: Model.fit with Adam and SGD with
momentum, a tf.function tape loop with AdamW excluding biases from weight decay,
backward_passes_per_step, a float64 layer among float32 ones, sharded by slices (in buckets
large and small) and by whole variables (asked for, and for clipnorm); the sharded state's bytes;
process sets (several ranks, and one rank, where it is the plain optimizer); checkpoints that
a plain Keras loads and that reshard to another rank count; bad input. On tf.keras (Keras 3,
or tf_keras with TF_USE_LEGACY_KERAS=1), and with Adam and a process set on tf_keras too where
it is installed beside Keras 3. Run under mpirun at any number of ranks."""

import os
import shutil
import sys
import tempfile
from importlib import metadata

import numpy as np
import tensorflow as tf

import mpirep.tensorflow.keras as hvd
from harness import check, expect_error, run, same_on_every_rank
from mpirep.tensorflow import _zero_checkpoint
from mpirep.tensorflow._trackables import optimizer_variables

hvd.init()
R, N = hvd.rank(), hvd.size()
keras = tf.keras
LEGACY = os.environ.get("TF_USE_LEGACY_KERAS") == "1"
BATCHES, BATCH = 3, 8
# Against DistributedOptimizer the sums are reduced in another grouping, so they may differ
# in the last bits, which a few Adam steps carry on.
TOLERANCE = dict(rtol=1e-5, atol=1e-6)


def _tf_keras():
    """tf_keras beside Keras 3 in this process, for its own wrapper; None where tf.keras is
    Keras 2 (TensorFlow < 2.16) or tf_keras is missing."""
    if int(metadata.version("keras").split(".")[0]) < 3:
        return None
    try:
        import tf_keras
    except ImportError:
        return None
    return tf_keras


TF_KERAS = _tf_keras()


def data(ranks=N, rank=R):
    rng = np.random.default_rng(11)
    x = rng.normal(size=(BATCHES * BATCH * ranks, 6)).astype(np.float32)
    y = np.sin(x[:, :1] * 2.0 + x[:, 1:2]).astype(np.float32)
    return x[rank::ranks], y[rank::ranks]


def model():
    keras.utils.set_random_seed(5)   # the same start on every rank
    return keras.Sequential([keras.Input((6,)),
                             keras.layers.Dense(8, activation="tanh", dtype="float64"),
                             keras.layers.Dense(8, activation="tanh"),
                             keras.layers.Dense(4, activation="tanh"),
                             keras.layers.Dense(1)])


def weights(m):
    return np.concatenate([np.ravel(w).astype(np.float64) for w in m.get_weights()])


def adam():
    return keras.optimizers.Adam(0.02)


def adamw():
    return keras.optimizers.AdamW(0.02, weight_decay=0.1)


def sgd():
    return keras.optimizers.SGD(0.05, momentum=0.9)


def adam_clipnorm():
    return keras.optimizers.Adam(0.02, clipnorm=0.01)


_fitted = {}


def fit(wrap, make, epochs=1, **options):
    """A model trained by Model.fit with ``wrap(make(), **options)``; those without options
    are trained once per job and shared by the checks."""
    key = (keras, wrap, make, epochs)
    if not options and key in _fitted:
        return _fitted[key]
    m = model()
    opt = wrap(make(), **options)
    m.compile(optimizer=opt, loss="mse")
    x, y = data()
    m.fit(x, y, batch_size=BATCH, epochs=epochs, shuffle=False, verbose=0)
    if not options:
        _fitted[key] = m, opt
    return m, opt


def slot_bytes(opt):
    """The bytes of the optimizer's variables beyond those every rank holds alike."""
    keys = opt._mpirep_zero.slot_keys
    return sum(v.numpy().nbytes for v in _variables(opt) if id(v) in keys)


def _variables(opt):
    variables = opt.variables
    return list(variables() if callable(variables) else variables)


def all_bytes(opt):
    return sum(v.numpy().nbytes for v in _variables(opt))


@check
def fit_matches_distributed_optimizer():
    fit_matches([(adam, 2), (sgd, 1)])   # AdamW runs in the tape loop


def fit_matches(optimizers):
    """``optimizers``: (constructor, slots per variable)."""
    for make, slots in optimizers:
        dist_model, dist = fit(hvd.DistributedOptimizer, make)
        zero_model, zero = fit(hvd.ZeroRedundancyOptimizer, make)
        np.testing.assert_allclose(weights(zero_model), weights(dist_model), **TOLERANCE,
                                   err_msg=make.__name__)
        same_on_every_rank(hvd, weights(zero_model))
        assert int(zero.iterations.numpy()) == BATCHES
        # The shards partition the state: each rank holds its own variables' slots.
        mine = slot_bytes(zero)
        plan = zero.shard_plan()
        itemsizes = [tf.as_dtype(v.dtype).size for v in zero_model.trainable_variables]
        assert mine == slots * plan.owned_bytes(itemsizes), (make.__name__, mine)
        replicated = sum(v.numpy().nbytes for v in optimizer_variables(zero))
        total = all_bytes(dist) - replicated
        assert sum(hvd.allgather_object(mine)) == total, make.__name__
        largest = slots * max(n * s for n, s in zip(plan.sizes, itemsizes))
        assert mine <= total / N + largest, (mine, total)


@check
def whole_variables_and_small_buckets_match_distributed_optimizer():
    # Whole variables when asked for and when clipnorm (each variable clipped by its own norm)
    # rules out slices; slices in buckets so small that every few variables are an exchange.
    for make, options in ((adam, dict(shard="variables")), (adam_clipnorm, {}),
                          (adam, dict(bucket_bytes=64))):
        dist_model, _ = fit(hvd.DistributedOptimizer, make)
        zero_model, zero = fit(hvd.ZeroRedundancyOptimizer, make, **options)
        np.testing.assert_allclose(weights(zero_model), weights(dist_model), **TOLERANCE,
                                   err_msg=f"{make.__name__} {options}")
        same_on_every_rank(hvd, weights(zero_model))
        plan = zero.shard_plan()
        if "bucket_bytes" in options:
            assert len(plan.exchanges) >= 4, plan.exchanges
        else:
            assert all(plan.is_whole(piece) for piece in plan.owned), plan.owned
            assert len(plan.exchanges) == 2   # one per dtype


@check
def state_is_one_over_np_on_a_deep_stack():
    keras.utils.set_random_seed(3)
    stack = keras.Sequential([keras.Input((16,))] +
                             [keras.layers.Dense(16) for _ in range(12)])
    zero = hvd.ZeroRedundancyOptimizer(adam())
    zero.build(stack.trainable_variables)
    total = 2 * sum(v.numpy().nbytes for v in stack.trainable_variables)
    per_rank = hvd.allgather_object(slot_bytes(zero))
    assert sum(per_rank) == total
    assert max(per_rank) <= 1.05 * total / N, (per_rank, total)


@check
def tape_loop_matches_distributed_optimizer():
    # ZeRO in two groups of variables, each exchanged once its gradients exist.
    def train(wrap, exclude_by_name=True, **options):
        m = model()
        opt = wrap(adamw(), **options)
        if exclude_by_name:
            opt.exclude_from_weight_decay(var_names=["bias"])
        else:
            opt.exclude_from_weight_decay(var_list=[v for v in m.trainable_variables
                                                    if len(v.shape) == 1])
        x, y = data()

        @tf.function
        def step(xb, yb):
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean(tf.square(m(xb, training=True) - yb))
            opt.apply_gradients(zip(tape.gradient(loss, m.trainable_variables),
                                    m.trainable_variables))
            return loss

        for b in range(BATCHES):
            step(x[b * BATCH:(b + 1) * BATCH], y[b * BATCH:(b + 1) * BATCH])
        return weights(m)

    zero = train(hvd.ZeroRedundancyOptimizer, num_groups=2)
    dist = train(hvd.DistributedOptimizer)
    np.testing.assert_allclose(zero, dist, **TOLERANCE)
    same_on_every_rank(hvd, zero)
    # Excluded by identity: a slice is excluded as its variable is.
    np.testing.assert_allclose(train(hvd.ZeroRedundancyOptimizer, exclude_by_name=False),
                               dist, **TOLERANCE)


@check
def backward_passes_per_step_matches_distributed_optimizer():
    # Three passes: the second applies the sum of two, the third only accumulates.
    dist_model, dist = fit(hvd.DistributedOptimizer, adam, backward_passes_per_step=2)
    zero_model, zero = fit(hvd.ZeroRedundancyOptimizer, adam, backward_passes_per_step=2)
    np.testing.assert_allclose(weights(zero_model), weights(dist_model), **TOLERANCE)
    same_on_every_rank(hvd, weights(zero_model))
    assert int(zero.iterations.numpy()) == int(dist.iterations.numpy()) == BATCHES
    assert int(zero._agg_helper.counter.numpy()) == 1


@check
def loss_scaled_shards_are_not_broadcast():
    """Under mixed_float16 the loss-scale optimizer wraps ZeRO and lists its shards among its
    own variables: the broadcast callback must leave them out (tf_keras: the feature matrix)."""
    keras.mixed_precision.set_global_policy("mixed_float16")
    try:
        trained = {}
        for wrap in (hvd.DistributedOptimizer, hvd.ZeroRedundancyOptimizer):
            m = model()
            m.compile(optimizer=wrap(adam()), loss="mse")
            x, y = data()
            m.fit(x, y, batch_size=BATCH, epochs=1, shuffle=False, verbose=0,
                  callbacks=[hvd.callbacks.BroadcastGlobalVariablesCallback(0)])
            trained[wrap] = weights(m)
    finally:
        keras.mixed_precision.set_global_policy("float32")
    np.testing.assert_allclose(trained[hvd.ZeroRedundancyOptimizer],
                               trained[hvd.DistributedOptimizer], rtol=1e-3, atol=1e-3)
    same_on_every_rank(hvd, trained[hvd.ZeroRedundancyOptimizer])


@check
def process_set_shards_over_its_ranks():
    # Two sets that split the ranks: at 2 ranks {0} and {1}, at more all but the last rank
    # and the last alone. Each rank trains on its own set: sharded over a set of several
    # ranks, and on a set of one rank, the plain optimizer.
    split = N - 1 if N > 2 else 1
    sets = [hvd.add_process_set(ranks) for ranks in (list(range(split)), list(range(split, N)))
            if ranks]
    mine = sets[0] if R < split else sets[1]
    try:
        m, zero = fit(hvd.ZeroRedundancyOptimizer, sgd, epochs=1, process_set=mine)
        if mine.size() > 1:
            ref, _ = fit(hvd.DistributedOptimizer, sgd, epochs=1, process_set=mine)
            np.testing.assert_allclose(weights(m), weights(ref), **TOLERANCE)
            assert zero.shard_plan().size == mine.size()
        else:
            ref, plain = fit(lambda o: o, sgd, epochs=1)
            np.testing.assert_array_equal(weights(m), weights(ref))
            assert zero.shard_plan().size == 1 and all_bytes(zero) == all_bytes(plain)
    finally:
        for process_set in sets:
            hvd.remove_process_set(process_set)


@check
def tf_keras_matches_distributed_optimizer():
    """tf_keras's optimizers take the other wrapper (apply_gradients, ``_built``)."""
    global keras
    if TF_KERAS is None:
        return
    keras_3, keras = keras, TF_KERAS
    try:
        fit_matches([(adam, 2)])
        tape_loop_matches_distributed_optimizer()
        process_set_shards_over_its_ranks()
    finally:
        keras = keras_3


@check
def checkpoint_is_a_plain_optimizers_and_reshards():
    if LEGACY or int(metadata.version("keras").split(".")[0]) < 3:
        return   # tf_keras and Keras 2 save through TensorFlow checkpoints, not gathered
    dist_model, dist = fit(hvd.DistributedOptimizer, adam)
    zero_model, zero = fit(hvd.ZeroRedundancyOptimizer, adam)
    directory = hvd.broadcast_object(tempfile.mkdtemp(prefix="zero_ckpt_") if R == 0 else None)
    path = os.path.join(directory, "model.keras")
    if N > 1:
        expect_error(RuntimeError, lambda: zero.save_own_variables({}))
    zero.gather_state()
    if R == 0:
        zero_model.save(path)
    hvd.allgather_object(0)   # the file is written before anyone reads it
    # A plain Keras loads it, with the state DistributedOptimizer reached.
    plain = keras.models.load_model(path).optimizer
    assert type(plain).__module__.startswith(("keras", "tf_keras")), type(plain)
    assert len(_variables(plain)) == len(_variables(dist))
    for p, d in zip(_variables(plain), _variables(dist)):
        np.testing.assert_allclose(p.numpy(), d.numpy(), **TOLERANCE)
    # Loading shards it again, over all ranks, one rank fewer and half of them; on half of
    # them training goes on as DistributedOptimizer's does from the same file.
    for ranks in sorted({N, max(N - 1, 1), (N + 1) // 2}, reverse=True):
        subset = hvd.add_process_set(list(range(ranks)))
        try:
            m, opt = loaded(path, hvd.ZeroRedundancyOptimizer, subset)
            assert_shard_of(opt, plain)
            if subset.included():
                assert opt.shard_plan().size == ranks
            if ranks == (N + 1) // 2:
                resumes_on_fewer_ranks(path, m, subset)
        finally:
            hvd.remove_process_set(subset)
    # A plain optimizer that load_model restored gives a new one its shard, and training goes
    # on from there as DistributedOptimizer's does from the same file.
    resumed = keras.models.load_model(path)
    resumed.compile(optimizer=hvd.ZeroRedundancyOptimizer(resumed.optimizer), loss="mse")
    assert_shard_of(resumed.optimizer, plain)
    reference = hvd.load_model(path)
    x, y = data()
    for m in (resumed, reference):
        m.fit(x, y, batch_size=BATCH, epochs=1, shuffle=False, verbose=0)
    np.testing.assert_allclose(weights(resumed), weights(reference), **TOLERANCE)
    same_on_every_rank(hvd, weights(resumed))
    assert int(resumed.optimizer.iterations.numpy()) == 2 * BATCHES
    # BestModelCheckpoint gathers the state on every rank before rank 0 writes.
    best = os.path.join(directory, "best.keras")
    m = model()
    m.compile(optimizer=hvd.ZeroRedundancyOptimizer(adam()), loss="mse")
    x, y = data()
    m.fit(x, y, batch_size=BATCH, epochs=1, shuffle=False, verbose=0,
          callbacks=[hvd.callbacks.MetricAverageCallback(),
                     hvd.callbacks.BestModelCheckpoint(monitor="loss", filepath=best)])
    hvd.allgather_object(0)
    saved = keras.models.load_model(best).optimizer
    assert int(saved.iterations.numpy()) == BATCHES
    assert len(_variables(saved)) == len(_variables(dist))
    assert_shard_of(m.optimizer, saved)
    hvd.allgather_object(0)   # every rank has read the files
    if R == 0:
        shutil.rmtree(directory)


def loaded(path, wrap, process_set):
    """A model whose ``wrap``ped Adam over ``process_set`` was built, then loaded from ``path``."""
    m = model()
    opt = wrap(adam(), process_set=process_set)
    m.compile(optimizer=opt, loss="mse")
    opt.build(m.trainable_variables)
    m.load_weights(path)
    return m, opt


def resumes_on_fewer_ranks(path, zero_model, subset):
    """An epoch on ``subset``'s ranks from the loaded checkpoint gives DistributedOptimizer's
    weights, bit-identical on the subset's ranks."""
    trained = None
    if subset.included():
        reference, _ = loaded(path, hvd.DistributedOptimizer, subset)
        x, y = data(subset.size(), subset.rank())
        for m in (zero_model, reference):
            m.fit(x, y, batch_size=BATCH, epochs=1, shuffle=False, verbose=0)
        np.testing.assert_allclose(weights(zero_model), weights(reference), **TOLERANCE)
        trained = weights(zero_model)
    on_subset = [w for w in hvd.allgather_object(trained) if w is not None]
    assert len(on_subset) == subset.size() and \
        all(w.tobytes() == on_subset[0].tobytes() for w in on_subset), "differs between ranks"


def assert_shard_of(zero, plain):
    """Each of ``zero``'s variables holds exactly the plain optimizer's value for it."""
    layout = _zero_checkpoint.plain_layout(zero)
    for key, piece, variable in _zero_checkpoint.entries(zero):
        whole = _variables(plain)[layout.index(key)].numpy()
        np.testing.assert_array_equal(variable.numpy(),
                                      _zero_checkpoint.shard_of(zero, piece, whole))


@check
def bad_input_names_the_problem():
    expect_error(ValueError, lambda: hvd.ZeroRedundancyOptimizer(
        keras.optimizers.Adam(0.1, global_clipnorm=1.0)))
    expect_error(ValueError, lambda: hvd.ZeroRedundancyOptimizer(
        keras.optimizers.Adam(0.1, use_ema=True)))
    expect_error(ValueError, lambda: hvd.ZeroRedundancyOptimizer(adam(), op=hvd.Max))
    expect_error(ValueError, lambda: hvd.ZeroRedundancyOptimizer(adam(), shard="rows"))
    expect_error(ValueError, lambda: hvd.ZeroRedundancyOptimizer(adam_clipnorm(),
                                                                 shard="slices"))
    if TF_KERAS is not None:
        expect_error(NotImplementedError, lambda: hvd.ZeroRedundancyOptimizer(
            TF_KERAS.optimizers.legacy.Adam(0.1)))
    compiled = model()
    compiled.compile(optimizer=hvd.ZeroRedundancyOptimizer(adam()), loss="mse")
    expect_error(ValueError, lambda: hvd.elastic.KerasState(compiled, batch=0))
    a, b = tf.Variable([1.0, 2.0]), tf.Variable([3.0])
    opt = hvd.ZeroRedundancyOptimizer(sgd())
    opt.build([a, b])
    try:
        opt.apply_gradients([(tf.ones([1]), b), (tf.ones([2]), a)])
    except ValueError as error:
        assert f"rank {R}" in str(error) and "order" in str(error), error
    else:
        raise AssertionError("no ValueError")


# Arguments, if any, name the checks to run.
run(hvd, only=lambda check: not sys.argv[1:] or check.__name__ in sys.argv[1:])
