"""mpirep-port: each import form and each Keras 2 rewrite on its own, the flags, idempotence,
the refusals, and the command line. Text in, text out: no TensorFlow needed."""
import textwrap

import pytest

from mpijob import REPO
from mpirep.port import PortError, port_source
from mpirep.port.cli import main

HEADER = "import horovod.tensorflow.keras as hvd\n"
PORTED = "import mpirep.tensorflow.keras as hvd\n"


def port(text, **kwargs):
    """The text (indented as the test has it) ported, after checking that porting it again
    changes nothing."""
    if text.startswith(HEADER):
        text = HEADER + textwrap.dedent(text[len(HEADER):])
    result = port_source(textwrap.dedent(text), **kwargs)
    again = port_source(result.text, **kwargs)   # idempotent: nothing left to change
    assert again.text == result.text and again.changes == [], again.changes
    return result


def ported(text, **kwargs):
    return port(text, **kwargs).text


def flags(text, **kwargs):
    return [(f.line, f.reason) for f in port(text, **kwargs).flags]


@pytest.mark.parametrize("before,after", [
    ("import horovod.tensorflow.keras as hvd\n", "import mpirep.tensorflow.keras as hvd\n"),
    ("import horovod.tensorflow as hvd\n", "import mpirep.tensorflow as hvd\n"),
    ("import horovod.keras as hvd\n", "import mpirep.keras as hvd\n"),
    ("from horovod.tensorflow import DistributedGradientTape, allreduce  # ops\n",
     "from mpirep.tensorflow import DistributedGradientTape, allreduce  # ops\n"),
    ("from horovod.tensorflow.keras import callbacks\n",
     "from mpirep.tensorflow.keras import callbacks\n"),
    ("import os, horovod.tensorflow as hvd\n", "import os, mpirep.tensorflow as hvd\n"),
    ("import horovod\nimport horovod.tensorflow.keras as hvd\nhorovod.run(main, np=2)\n",
     "import mpirep\nimport mpirep.tensorflow.keras as hvd\nmpirep.run(main, np=2)\n"),
    ("import horovod.tensorflow\nhorovod.tensorflow.init()\n",
     "import mpirep.tensorflow\nmpirep.tensorflow.init()\n"),
])
def test_every_horovod_import_form(before, after):
    assert ported(before) == after


@pytest.mark.parametrize("line,reason", [
    ("import horovod.torch as hvd", "mpirep is for TensorFlow"),
    ("from horovod.runner.common.util import env", "horovodrun's internals"),
    ("from horovod.tensorflow.data.compute_service import TfDataServiceConfig", "tf.data service"),
    ("import horovod.tensorflow.nothing_like_this as x", "which mpirep does not have"),
])
def test_horovod_modules_without_a_counterpart_are_flagged(line, reason):
    result = port(HEADER + line + "\n")
    assert line in result.text   # left as it was
    assert len(result.flags) == 1 and result.flags[0].line == 2 and reason in result.flags[0].reason


def test_compile_loses_experimental_run_tf_function_in_every_position():
    assert ported(HEADER + """\
        model.compile(loss='mse',
                      optimizer=opt,
                      experimental_run_tf_function=False)
        model.compile(experimental_run_tf_function=False, loss='mse')
        model.compile(experimental_run_tf_function=False)
        model.compile(optimizer=opt,
                      # Horovod: let the optimizer compute gradients
                      experimental_run_tf_function=False,
                      )
        """) == PORTED + """\
model.compile(loss='mse',
              optimizer=opt)
model.compile(loss='mse')
model.compile()
model.compile(optimizer=opt,
              # Horovod: let the optimizer compute gradients
              )
"""


def test_optimizer_variables_call_becomes_the_property():
    assert ported(HEADER + "hvd.broadcast_variables(opt.variables(), root_rank=0)\n") == (
        PORTED + "hvd.broadcast_variables(opt.variables, root_rank=0)\n")


def test_variables_call_is_flagged_where_tf1_optimizers_are_used():
    text = HEADER + "opt = tf.compat.v1.train.AdamOptimizer(0.1)\nv = opt.variables()\n"
    result = port(text)
    assert "opt.variables()" in result.text
    assert [f.line for f in result.flags] == [3]


def test_optimizer_arguments():
    assert ported(HEADER + """\
        a = tf.keras.optimizers.SGD(lr=0.1, momentum=0.9)
        b = keras.optimizers.Adadelta(lr=1.0)
        c = Adam(lr=0.01)
        warmup = hvd.callbacks.LearningRateWarmupCallback(initial_lr=0.1)
        args = parser.parse_args(); print(args.lr)
        """) == PORTED + """\
a = tf.keras.optimizers.SGD(learning_rate=0.1, momentum=0.9)
b = keras.optimizers.Adadelta(learning_rate=1.0)
c = Adam(learning_rate=0.01)
warmup = hvd.callbacks.LearningRateWarmupCallback(initial_lr=0.1)
args = parser.parse_args(); print(args.lr)
"""
    assert flags(HEADER + "opt = tf.keras.optimizers.SGD(0.1, decay=1e-6)\n") == [
        (2, "the optimizer's decay= is gone in Keras 3")]


def test_the_optimizers_lr_attribute():
    assert ported(HEADER + """\
        opt = hvd.DistributedOptimizer(tf.optimizers.Adam(0.1))
        print(opt.lr, model.optimizer.lr, args.lr)
        tf.keras.backend.set_value(state.model.optimizer.lr,  0.001 * hvd.size())
        K.set_value(opt.lr, scale(epoch))
        """) == PORTED + """\
opt = hvd.DistributedOptimizer(tf.optimizers.Adam(0.1))
print(opt.learning_rate, model.optimizer.learning_rate, args.lr)
state.model.optimizer.learning_rate.assign(0.001 * hvd.size())
opt.learning_rate.assign(scale(epoch))
"""
    assert flags(HEADER + "lr = K.get_value(model.optimizer.lr)\n") == [
        (2, "K.get_value() returns a Keras 3 variable itself, not its value")]


def test_legacy_optimizers():
    assert ported(HEADER + """\
        from tensorflow.keras.optimizers.legacy import SGD
        opt = tf.keras.optimizers.legacy.Adam(0.1)
        """) == PORTED + """\
from tensorflow.keras.optimizers import SGD
opt = tf.keras.optimizers.Adam(0.1)
"""


def test_checkpoint_paths_get_keras_3_endings():
    assert ported(HEADER + """\
        tf.keras.callbacks.ModelCheckpoint('./checkpoint-{epoch}.h5')
        tf.keras.callbacks.ModelCheckpoint("w-{epoch}.h5", save_weights_only=True)
        ModelCheckpoint(filepath=os.path.join(out, 'm-{epoch}.h5'), monitor='loss')
        ModelCheckpoint(out + '/m.h5')
        ModelCheckpoint('m-{}.h5'.format(1))
        model.save_weights('final.h5')
        model.save_weights('final.weights.h5')
        ModelCheckpoint('done.keras')
        """) == PORTED + """\
tf.keras.callbacks.ModelCheckpoint('./checkpoint-{epoch}.keras')
tf.keras.callbacks.ModelCheckpoint("w-{epoch}.weights.h5", save_weights_only=True)
ModelCheckpoint(filepath=os.path.join(out, 'm-{epoch}.keras'), monitor='loss')
ModelCheckpoint(out + '/m.keras')
ModelCheckpoint('m-{}.keras'.format(1))
model.save_weights('final.weights.h5')
model.save_weights('final.weights.h5')
ModelCheckpoint('done.keras')
"""


def test_checkpoint_paths_it_cannot_see_are_flagged():
    found = flags(HEADER + """\
        fmt = './checkpoint-{epoch}.h5'
        ModelCheckpoint(fmt)
        ModelCheckpoint('w.h5', save_weights_only=args.weights)
        model.load_weights('pretrained.h5')
        """)
    assert [line for line, _ in found] == [2, 3, 4, 5], found
    assert "ends in .h5" in found[0][1] and "cannot see" in found[1][1]


def test_fit_loses_its_worker_arguments_and_generator_methods_are_renamed():
    assert ported(HEADER + """\
        model.fit_generator(gen, steps_per_epoch=10,
                            workers=4, use_multiprocessing=True, max_queue_size=10)
        score = model.evaluate_generator(gen, 5, workers=4)
        model.predict_generator(gen)
        loader = Loader(workers=4)
        """) == PORTED + """\
model.fit(gen, steps_per_epoch=10)
score = model.evaluate(gen, 5)
model.predict(gen)
loader = Loader(workers=4)
"""


def test_mixed_precision_experimental():
    assert ported(HEADER + """\
        policy = tf.keras.mixed_precision.experimental.Policy('mixed_float16')
        tf.keras.mixed_precision.experimental.set_policy(policy)
        """) == PORTED + """\
policy = tf.keras.mixed_precision.Policy('mixed_float16')
tf.keras.mixed_precision.set_global_policy(policy)
"""


def test_what_has_no_mechanical_rewrite_is_flagged():
    found = flags(HEADER + """\
        gen = keras.preprocessing.image.ImageDataGenerator(rotation_range=8)
        sess = tf.keras.backend.get_session()
        class Mine(tf.keras.optimizers.Optimizer):
            def get_updates(self, loss, params):
                return []
        K.set_session(tf.Session(config=tf.ConfigProto()))
        """)
    assert [line for line, _ in found] == [2, 3, 5, 7, 7, 7], found


def test_comments_and_layout_survive():
    text = HEADER + textwrap.dedent("""\
        # Horovod: the optimizer   (odd  spacing kept)
        opt = tf.keras.optimizers.SGD( lr = 0.1 )  # trailing comment
        \"\"\"a docstring mentioning opt.variables() and 'x.h5'\"\"\"
        """)
    assert port(text).text == text.replace("lr =", "learning_rate =").replace(HEADER, PORTED)


def test_keras2_mode_ports_imports_only():
    text = HEADER + textwrap.dedent("""\
        import keras
        from keras import backend as K
        opt = keras.optimizers.Adadelta(lr=1.0)
        model.compile(optimizer=opt, experimental_run_tf_function=False)
        """)
    result = port(text, keras2_only=True)
    assert result.text == text.replace(HEADER, PORTED).replace(
        "import keras\n", "import tf_keras as keras\n").replace("from keras import", "from tf_keras import")
    assert [(f.line, "ignore lr=" in f.reason) for f in result.flags] == [(4, True)]


def test_keras2_mode_flags_a_bare_import_of_a_keras_submodule():
    result = port(HEADER + "import keras.backend\nimport keras.utils as U\n", keras2_only=True)
    assert result.text == PORTED + "import keras.backend\nimport tf_keras.utils as U\n"
    assert [(f.line, f.reason) for f in result.flags] == [
        (2, "import keras.backend gives Keras 3 even under TF_USE_LEGACY_KERAS=1")]


@pytest.mark.parametrize("text,message", [
    ("import tensorflow as tf\nprint(tf.__version__)\n", "imports no Horovod module"),
    ("import horovod.tensorflow as hvd\nif True print(1)\n", "is not Python"),
])
def test_refuses_scripts_that_are_not_horovod_python(text, message):
    with pytest.raises(PortError, match=message):
        port_source(text)


def test_an_mpirep_script_is_accepted_and_left_alone():
    text = "import mpirep.tensorflow.keras as hvd\nhvd.init()\n"
    result = port_source(text)
    assert result.text == text and result.changes == [] and result.flags == []


def test_command_line_diff_report_and_refusals(tmp_path, capsys):
    script = tmp_path / "train.py"
    script.write_text(HEADER + "model.compile(loss='mse', experimental_run_tf_function=False)\n")
    notes = tmp_path / "notes.txt"
    notes.write_text(HEADER)
    plain = tmp_path / "plain.py"
    plain.write_text("print(1)\n")
    assert main([str(script), str(notes), str(plain), str(tmp_path / "gone.py")]) == 2
    out, err = capsys.readouterr()
    assert out.splitlines()[2:] == [
        "@@ -1,2 +1,2 @@", "-import horovod.tensorflow.keras as hvd",
        "-model.compile(loss='mse', experimental_run_tf_function=False)",
        "+import mpirep.tensorflow.keras as hvd", "+model.compile(loss='mse')"]
    assert f"{script}: 2 change(s), 0 to check by hand" in err
    assert "line 2: removed compile's experimental_run_tf_function" in err
    assert f"mpirep-port: error: {notes} is not a Python script" in err
    assert f"mpirep-port: error: {plain} imports no Horovod module" in err
    assert "gone.py: no such file" in err
    assert script.read_text().startswith(HEADER)   # only --in-place writes


def test_in_place_keeps_a_backup_and_a_second_run_changes_nothing(tmp_path, capsys):
    script = tmp_path / "train.py"
    original = HEADER + "opt = tf.keras.optimizers.SGD(lr=0.1)\n"
    script.write_text(original)
    assert main(["--in-place", str(script)]) == 0
    assert script.read_text() == original.replace("horovod", "mpirep").replace("lr=", "learning_rate=")
    assert (tmp_path / "train.py.bak").read_text() == original
    assert main(["--in-place", str(script)]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["train.py", "train.py.bak"]
    capsys.readouterr()
    script.write_text(original)
    assert main(["--in-place", str(script)]) == 2   # would overwrite the backup
    assert "train.py.bak exists already" in capsys.readouterr().err


def test_keras2_command_says_how_to_run_on_tf_keras(tmp_path, capsys):
    script = tmp_path / "train.py"
    script.write_text(HEADER)
    assert main(["--keras2", str(script)]) == 0
    err = capsys.readouterr().err
    assert "pip install 'tf_keras==" in err and f"mpirep-run --keras2 -np 2 python {script}" in err


def test_the_projects_horovod_scripts_port_cleanly_and_idempotently():
    for script in sorted((REPO / "tests" / "tf" / "horovod_scripts").glob("*.py")):
        text = script.read_text()
        if "horovod" not in text:
            continue
        result = port(text)
        assert "import horovod" not in result.text and result.flags == [], script
