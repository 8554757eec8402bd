"""The tf_keras path for Keras 2 scripts: `mpirep-run --keras2`, the hint a Keras 2 error gets
under Keras 3; and mpirep.run's checks of its arguments, made before any job starts."""
import shlex
import sys
import types

import pytest

import mpirep
from mpirep import keras2_hint
from mpirep.launch import cli, hosts, keras2, mpi_probe

OMPI = mpi_probe.MPIInfo(mpi_probe.OPEN_MPI, "4.1.4", "/usr/bin/mpirun")
VERSIONS = {"tf_keras": "2.21.0", "tensorflow": "2.21.0"}


@pytest.fixture
def installed(monkeypatch):
    """The package versions the launcher reads from metadata; a test edits them."""
    versions = dict(VERSIONS)

    def version(name):
        if name not in versions:
            raise keras2.metadata.PackageNotFoundError(name)
        return versions[name]

    monkeypatch.setattr(keras2.metadata, "version", version)
    monkeypatch.setattr(mpi_probe, "probe", lambda environ: OMPI)
    monkeypatch.setattr(hosts, "local_core_count", lambda: 2)
    return versions


def test_keras2_sets_tf_use_legacy_keras_for_the_ranks(installed, capsys):
    assert cli.main(["--dry-run", "--keras2", "-np", "2", "python", "t.py"], {"PATH": "/usr/bin"}) == 0
    words = shlex.split(capsys.readouterr().out)
    assert words[0] == "TF_USE_LEGACY_KERAS=1"
    assert words[words.index("-x") + 1] == "TF_USE_LEGACY_KERAS"


@pytest.mark.parametrize("versions,message", [
    ({"tensorflow": "2.21.0"}, "tf_keras, which is not installed: pip install 'tf_keras==2.21.*'"),
    ({"tensorflow": "2.19.1", "tf_keras": "2.21.0"},
     "tf_keras 2.21 is for TensorFlow 2.21, but TensorFlow 2.19 is installed: "
     "pip install 'tf_keras==2.19.*'"),
])
def test_keras2_refuses_a_missing_or_mismatched_tf_keras(installed, capsys, versions, message):
    installed.clear()
    installed.update(versions)
    assert cli.main(["--dry-run", "--keras2", "-np", "2", "python", "t.py"], {"PATH": "/usr/bin"}) == 1
    assert message in capsys.readouterr().err


@pytest.mark.parametrize("versions,ok,detail", [
    (("2.12.1", "2.12.0", ""), True, "tf.keras is Keras 2 (TensorFlow 2.12.1): Keras 2 scripts"),
    (("2.21.0", "3.15.1", "2.21.0"), True, "tf_keras 2.21.0 runs Keras 2 scripts"),
    (("2.21.0", "3.15.1", ""), False,
     "tf.keras is Keras 3.15.1 and tf_keras is not installed: Keras 2 scripts, as Horovod's are, "
     "run with pip install 'tf_keras==2.21.*' and mpirep-run --keras2, or after mpirep-port"),
    (("2.19.0", "3.15.1", "2.21.0"), False, "tf_keras 2.21.0 is for another TensorFlow"),
])
def test_check_build_says_where_keras_2_scripts_run(versions, ok, detail):
    found_ok, found = keras2.describe(*versions)
    assert found_ok == ok and detail in found, found


@pytest.fixture
def keras_3(monkeypatch):
    monkeypatch.setitem(sys.modules, "keras", types.SimpleNamespace(__version__="3.15.1"))
    monkeypatch.delenv("TF_USE_LEGACY_KERAS", raising=False)


def _raised(error):
    try:
        raise error
    except BaseException as caught:
        return type(caught), caught, caught.__traceback__


@pytest.mark.parametrize("error", [
    TypeError("Trainer.compile() got an unexpected keyword argument 'experimental_run_tf_function'"),
    TypeError("in user code:\n  hvd.broadcast_variables(opt.variables(), root_rank=0)\n"
              "TypeError: 'list' object is not callable"),
    ValueError("The filepath provided must end in `.keras` (Keras model format). Received: x.h5"),
    ValueError("Argument(s) not recognized: {'lr': 0.1}"),
    AttributeError("'Sequential' object has no attribute 'fit_generator'"),
])
def test_known_keras_2_errors_get_the_hint_under_keras_3(installed, keras_3, error):
    hint = keras2_hint.hint(*_raised(error))
    assert hint.startswith("mpirep: this is a Keras 2 API, and tf.keras here is Keras 3")
    assert "pip install 'tf_keras==2.21.*'" in hint  # the installed (mocked) TensorFlow's
    assert "mpirep-run --keras2" in hint and "mpirep-port" in hint


def test_variables_called_outside_a_tf_function_is_recognised_by_its_line(keras_3):
    opt = types.SimpleNamespace(variables=[])
    try:
        opt.variables()
    except TypeError as error:
        assert keras2_hint.hint(TypeError, error, error.__traceback__)


def test_other_errors_and_tf_keras_get_no_hint(keras_3, monkeypatch):
    assert keras2_hint.hint(*_raised(TypeError("'list' object is not callable"))) is None
    assert keras2_hint.hint(*_raised(ValueError("shapes differ"))) is None
    monkeypatch.setenv("TF_USE_LEGACY_KERAS", "1")
    assert keras2_hint.hint(*_raised(AttributeError("has no attribute 'lr'"))) is None


def _work():
    return 1


@pytest.mark.parametrize("kwargs,error,message", [
    ({}, ValueError, "needs np"),
    ({"np": 2, "min_np": 1}, mpirep.MpirepError, "mpirep-run --min-np/--max-np"),
    ({"np": 2, "use_gloo": True, "use_mpi": True}, ValueError, "cannot both be set"),
    ({"np": 2, "colour": "blue"}, TypeError, "unexpected keyword arguments ['colour']"),
])
def test_run_checks_its_arguments_before_starting_a_job(kwargs, error, message):
    with pytest.raises(error, match=message.replace("[", r"\[").replace("]", r"\]")):
        mpirep.run(_work, **kwargs)


def test_run_says_why_a_function_cannot_travel(monkeypatch):
    from mpirep import function_job

    monkeypatch.setattr(function_job, "pickler", lambda: function_job.pickle)
    with pytest.raises(mpirep.MpirepError, match="install cloudpickle for lambdas and closures"):
        mpirep.run(lambda: 1, np=2)


def test_run_passes_horovod_run_arguments_as_mpirep_run_flags():
    from mpirep.function_job import _flags
    from mpirep.launch import options

    flags = _flags(3, "a:2,b:1", None, 5, 2222, "/k", True, "/out", True, "--mca btl self,tcp",
                   ["eth0", "eth1"])
    _, parsed = options.parse(flags + ["--", "python", "-m", "mpirep.function_rank"])
    assert (parsed.num_proc, parsed.hosts, parsed.start_timeout, parsed.ssh_port) == (3, "a:2,b:1", 5.0, 2222)
    assert (parsed.ssh_identity_file, parsed.output_filename, parsed.mpi_args) == ("/k", "/out", "--mca btl self,tcp")
    assert parsed.network_interfaces == ["eth0", "eth1"] and parsed.disable_cache and parsed.verbose
    assert parsed.command == ["python", "-m", "mpirep.function_rank"]
