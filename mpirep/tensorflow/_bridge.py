"""Chooses how collectives enter TensorFlow graphs.

MPIREP_TF_BRIDGE selects: ``native`` (the op library, built on first use; failing to build is an
error), ``numpy`` (tf.numpy_function), or ``auto``, the default: native when it builds, else numpy
with one warning. docs/tensorflow.md gives the measurements behind the default.
"""

import os
import warnings

_chosen = None


def bridge():
    """The bridge module in use: it has ``run`` and ``run_group``."""
    global _chosen
    if _chosen is None:
        _chosen = _choose(os.environ.get("MPIREP_TF_BRIDGE", "auto").strip().lower())
    return _chosen


def select(mode):
    """Switches to ``mode`` (as MPIREP_TF_BRIDGE) for ops built from now on; for benchmarks
    that compare the bridges in one process."""
    global _chosen
    _chosen = _choose(mode)


def name():
    return "native" if bridge().__name__.endswith("_native") else "numpy"


def _choose(mode):
    if mode not in ("auto", "native", "numpy"):
        raise ValueError(f"MPIREP_TF_BRIDGE must be auto, native or numpy, not {mode!r}")
    if mode == "numpy":
        from mpirep.tensorflow import _bridge_numpy
        return _bridge_numpy
    from mpirep.tensorflow import _bridge_native
    try:
        _bridge_native.load()
    except Exception as error:  # any failure to build or load must leave a working fallback
        if mode == "native":
            raise
        warnings.warn(
            "mpirep: the TensorFlow op library could not be built or loaded, so collectives use "
            "the slower tf.numpy_function bridge (set MPIREP_TF_BRIDGE=numpy to silence this). "
            f"Reason: {error}", RuntimeWarning, stacklevel=3)
        from mpirep.tensorflow import _bridge_numpy
        return _bridge_numpy
    return _bridge_native
