"""`mpirep-run --keras2`: the ranks run on tf_keras (TF_USE_LEGACY_KERAS=1), where a script
written for Keras 2, as every Horovod script was, runs unchanged. The check reads installed
packages' metadata only, so the launcher still imports no TensorFlow."""
from importlib import metadata

from mpirep.keras2_hint import install_command

from .errors import LaunchError

VARIABLE = "TF_USE_LEGACY_KERAS"


def _major_minor(package):
    try:
        return tuple(metadata.version(package).split(".")[:2])
    except metadata.PackageNotFoundError:
        return None


def check():
    """Raises LaunchError if this Python's tf_keras is missing or made for another
    TensorFlow: the ranks would fail to import it, or import a mismatched Keras."""
    tf_keras, tensorflow = _major_minor("tf_keras"), _major_minor("tensorflow")
    if tf_keras is None:
        raise LaunchError("--keras2 runs the ranks on tf_keras, which is not installed: "
                          f"{install_command()} (docs/porting.md)")
    if tensorflow is not None and tf_keras != tensorflow:
        wanted = ".".join(tensorflow)
        raise LaunchError(f"--keras2: tf_keras {'.'.join(tf_keras)} is for TensorFlow "
                          f"{'.'.join(tf_keras)}, but TensorFlow {wanted} is installed: "
                          f"pip install 'tf_keras=={wanted}.*'")


def environment(args):
    if not args.keras2:
        return {}
    check()
    return {VARIABLE: "1"}


def describe(tensorflow, keras, tf_keras):
    """(ok, detail) for --check-build, from the versions the probed Python has ("" if not
    installed): where Keras 2 scripts, as Horovod's are, can run."""
    major_minor = tuple(int(part) for part in tensorflow.split(".")[:2])
    if major_minor < (2, 16):
        return True, (f"tf.keras is Keras 2 (TensorFlow {tensorflow}): Keras 2 scripts, as "
                      "Horovod's are, run with their import changed")
    if tf_keras.split(".")[:2] == tensorflow.split(".")[:2]:
        return True, (f"tf.keras is Keras {keras}; tf_keras {tf_keras} runs Keras 2 scripts, as "
                      "Horovod's are, under mpirep-run --keras2 (docs/porting.md)")
    wanted = ".".join(tensorflow.split(".")[:2])
    found = f"tf_keras {tf_keras} is for another TensorFlow" if tf_keras else "tf_keras is not installed"
    return False, (f"tf.keras is Keras {keras} and {found}: Keras 2 scripts, as Horovod's are, "
                   f"run with pip install 'tf_keras=={wanted}.*' and mpirep-run --keras2, or "
                   "after mpirep-port (docs/porting.md)")
