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
