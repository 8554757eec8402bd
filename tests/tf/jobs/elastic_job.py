"""The elastic API within one job (no elastic launcher, so resets happen in the process, as in
Horovod): KerasState, TensorFlowState, ObjectState, the Replicator's state, run() and the
Keras callbacks.  Run under mpirun at any number of ranks; harness.py gathers the failures."""

import numpy as np
import tensorflow as tf

import mpirep
import mpirep.tensorflow.keras as hvd
from harness import check, expect_error, run, same_on_every_rank
from mpirep.replicator import Replicator

hvd.init()
R, N = hvd.rank(), hvd.size()
STEPS = 6


def model_and_optimizer(seed=3):
    tf.keras.utils.set_random_seed(seed)
    model = tf.keras.Sequential([tf.keras.layers.Input((3,)), tf.keras.layers.Dense(4),
                                 tf.keras.layers.Dense(1)])
    optimizer = hvd.DistributedOptimizer(tf.keras.optimizers.Adam(0.01))
    model.compile(optimizer=optimizer, loss="mse")
    return model, optimizer


def values(variables):
    return [np.array(v) for v in variables]


def data(rows):
    """Rank- and index-dependent batches."""
    x = (np.arange(rows * 3).reshape(rows, 3) % 7 + R).astype(np.float32) / 7
    return x, x.sum(1, keepdims=True) * (R + 1)


@check
def keras_state_keeps_weights_optimizer_slots_and_attributes():
    model, optimizer = model_and_optimizer()
    state = hvd.elastic.KerasState(model, epoch=2, batch=5)
    tracked = state._tracked()
    # 4 weights; Adam: two slots per weight, the iteration count, and in Keras 3 the rate
    assert len(tracked) in (4 + 2 * 4 + 1, 4 + 2 * 4 + 2), [v.name for v in tracked]
    state.sync()
    state.commit()
    committed = values(tracked)
    model.fit(*data(8), batch_size=4, epochs=1, verbose=0)
    state.epoch, state.batch = 9, 9
    assert any(not np.array_equal(a, b) for a, b in zip(committed, values(tracked)))
    state.restore()
    for a, b in zip(committed, values(tracked)):
        assert a.tobytes() == b.tobytes()
    assert (state.epoch, state.batch) == (2, 5)
    for value in values(tracked):
        same_on_every_rank(hvd, value)


@check
def sync_gives_every_rank_rank_0s_values():
    model, _ = model_and_optimizer(seed=10 + R)   # different weights on every rank
    generator = tf.Variable(np.array([R, 7], np.uint32))   # a dtype the core cannot reduce
    state = hvd.elastic.TensorFlowState(model.variables + [generator], step=R)
    state.sync()
    synced = values(state.variables)
    for value in synced:
        same_on_every_rank(hvd, value)
    assert state.step == 0 and generator.numpy().tolist() == [0, 7]
    # as in Horovod, a sync is also what restore goes back to until the next commit
    for variable in state.variables:
        variable.assign(tf.zeros_like(variable) + 1)
    state.step = 5
    state.restore()
    for a, b in zip(synced, values(state.variables)):
        assert a.tobytes() == b.tobytes()
    assert state.step == 0


@check
def run_resets_in_the_process_and_restores_after_a_lost_rank():
    state = hvd.elastic.ObjectState(step=0, log=[])
    fired = []
    state.register_reset_callbacks([lambda: fired.append(hvd.size())])

    @hvd.elastic.run
    def train(state, until):
        while state.step < until:
            state.step += 1
            state.log = state.log + [state.step]
            if state.step == 3 and not fired:
                raise hvd.elastic.HostsUpdatedInterrupt(False)
            if state.step == 5 and len(fired) == 1:
                state.commit()
                state.step += 100                       # undone by the restore
                raise hvd.elastic.HorovodInternalError()
            if state.step % 2 == 0:
                state.commit()
        return state.step

    assert train(state, 7) == 7
    assert fired == [N, N]
    assert state.log == [1, 2, 3, 4, 5, 6, 7]


@check
def the_horovod_names_are_mpireps_exceptions():
    assert hvd.elastic.HorovodInternalError is mpirep.elastic.RanksLostError
    assert hvd.elastic.HostsUpdatedInterrupt is mpirep.elastic.HostsChangedInterrupt
    assert issubclass(mpirep.elastic.RanksLostError, mpirep.MpirepError)
    assert hvd.elastic.HostsUpdatedInterrupt(True).skip_sync


@check
def a_resumed_epoch_runs_only_the_batches_it_has_left():
    model, optimizer = model_and_optimizer()
    state = hvd.elastic.KerasState(model, epoch=1, batch=4)   # as after a reset mid-epoch 1
    seen = []

    class Record(tf.keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            seen.append((state.epoch, state.batch))

    callbacks = [hvd.elastic.UpdateEpochStateCallback(state),
                 hvd.elastic.UpdateBatchStateCallback(state),
                 hvd.elastic.CommitStateCallback(state, batches_per_commit=2), Record()]

    @hvd.elastic.run
    def train(state):
        x, y = data(4 * STEPS * 3)
        model.fit(tf.data.Dataset.from_tensor_slices((x, y)).batch(4).repeat(),
                  steps_per_epoch=STEPS, epochs=3 - state.epoch, callbacks=callbacks,
                  verbose=0)

    train(state)
    assert seen == [(1, 5), (1, 6)] + [(2, b) for b in range(1, STEPS + 1)], seen
    assert (state.epoch, state.batch) == (3, 0)
    assert int(optimizer.iterations.numpy()) == 2 + STEPS


@check
def a_state_at_the_end_of_an_epoch_moves_on_to_the_next():
    model, _ = model_and_optimizer()
    state = hvd.elastic.KerasState(model, epoch=0, batch=STEPS)   # reset before on_epoch_end
    calls = []

    @hvd.elastic.run
    def train(state):
        calls.append((state.epoch, state.batch))
        x, y = data(4 * STEPS)
        model.fit(x, y, batch_size=4, steps_per_epoch=STEPS, epochs=2 - state.epoch,
                  callbacks=[hvd.elastic.UpdateEpochStateCallback(state),
                             hvd.elastic.UpdateBatchStateCallback(state)], verbose=0)

    train(state)
    assert calls == [(0, STEPS), (1, 0)] and (state.epoch, state.batch) == (2, 0), calls


@check
def replicator_state_keeps_model_and_optimizer_slots():
    repl = Replicator()
    with repl.context():
        model = tf.keras.Sequential([tf.keras.layers.Input((3,)), tf.keras.layers.Dense(2)])
        optimizer = repl.wrap_optimizer(tf.keras.optimizers.SGD(0.1, momentum=0.9))
    state = repl.elastic_state(model, optimizer, step=0)
    # 2 weights, their 2 momenta, the iteration count and in Keras 3 the rate
    assert len(state.variables) in (2 + 2 + 1, 2 + 2 + 2), [v.name for v in state.variables]
    state.sync()
    state.commit()
    committed = values(state.variables)

    def step(x):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(model(x) ** 2)
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))

    repl.run(step, args=(tf.constant(data(4)[0]),))
    state.step = 1
    state.restore()
    assert state.step == 0
    for a, b in zip(committed, values(state.variables)):
        assert a.tobytes() == b.tobytes()


@check
def misuse_is_explained():
    unbuilt = tf.keras.Sequential([tf.keras.layers.Dense(2)])
    expect_error(ValueError, lambda: hvd.elastic.KerasState(unbuilt))

    class Bare(hvd.elastic.State):
        def sync(self):
            pass

    try:
        Bare().commit()
    except NotImplementedError as error:
        assert "must define snapshot() and load_snapshot()" in str(error)
    else:
        raise AssertionError("a state that keeps nothing was committed")
    model, _ = model_and_optimizer()
    state = hvd.elastic.KerasState(model)
    expect_error(mpirep.MpirepError, state.restore)   # nothing committed yet


run(hvd)
