"""Which Keras the TensorFlow jobs of tests/tf and tests/replicator can run on, and the
environment that selects one."""

from importlib import metadata


def _keras_major():
    try:
        return int(metadata.version("keras").split(".")[0])
    except metadata.PackageNotFoundError:
        return 0


# From TensorFlow 2.16 on tf.keras is Keras 3, or tf_keras under TF_USE_LEGACY_KERAS=1; before,
# it is the Keras 2 that TensorFlow pins, whatever the variable says.
KERAS_3 = _keras_major() >= 3


def keras_cases(cases):
    """The (ranks, keras, ...) cases that differ on the installed TensorFlow: where tf.keras is
    Keras 2, the "keras3" cases run on it as "keras2", and the "tf_keras" ones, which would run
    the same Keras again, are left out."""
    if KERAS_3:
        return cases
    return [(ranks, "keras2", *rest) for ranks, keras, *rest in cases if keras == "keras3"]


def keras_env(keras):
    """The environment that makes tf.keras the Keras a case names."""
    return {"TF_USE_LEGACY_KERAS": "1" if keras == "tf_keras" else "0"}
