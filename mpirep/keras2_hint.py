"""One more line after the traceback of a rank that died of a Keras 2 API under Keras 3: how
to run the script on tf_keras instead, or port it. Shown by the excepthook that init()
installs (mpirep/session.py), and only where tf.keras is Keras 3."""
import os
import sys
import traceback as traceback_module
from importlib import metadata

# (exception type name, text in its message) of the errors Keras 3 raises on Keras 2 calls
KNOWN_ERRORS = (
    ("TypeError", "experimental_run_tf_function"),
    ("ValueError", "Argument(s) not recognized: {'lr'"),
    ("ValueError", "the filepath provided must end in `.weights.h5`"),
    ("ValueError", "The filepath provided must end in `.keras`"),
    ("ValueError", "The filename must end in `.weights.h5`"),
    ("TypeError", "unexpected keyword argument 'workers'"),
    ("TypeError", "unexpected keyword argument 'use_multiprocessing'"),
    ("TypeError", "unexpected keyword argument 'max_queue_size'"),
    ("AttributeError", "has no attribute 'lr'"),
    ("AttributeError", "has no attribute 'fit_generator'"),
    ("AttributeError", "has no attribute 'evaluate_generator'"),
    ("AttributeError", "has no attribute 'predict_generator'"),
    ("ImportError", "`keras.optimizers.legacy` is not supported in Keras 3"),
)
LEGACY_VALUES = ("1", "true", "yes")


def install_command():
    """The pip command that installs the tf_keras made for this Python's TensorFlow (each
    tf_keras release requires the TensorFlow of its own major.minor), read from metadata."""
    try:
        major_minor = ".".join(metadata.version("tensorflow").split(".")[:2])
    except metadata.PackageNotFoundError:
        return "pip install 'tf_keras==<your TensorFlow major.minor>.*'"
    return f"pip install 'tf_keras=={major_minor}.*'"


def _keras_3_in_use():
    keras = sys.modules.get("keras")
    version = getattr(keras, "__version__", "0")
    legacy = os.environ.get("TF_USE_LEGACY_KERAS", "").strip().lower() in LEGACY_VALUES
    return version.split(".")[0].isdigit() and int(version.split(".")[0]) >= 3 and not legacy


def _variables_called(value, traceback):
    """``opt.variables()``: Keras 3's variables is a list, which the call then calls. Inside
    a tf.function the message quotes the line; outside, the traceback's last frame has it."""
    message = str(value)
    if "'list' object is not callable" not in message:
        return False
    if ".variables()" in message:
        return True
    frames = traceback_module.extract_tb(traceback) if traceback is not None else []
    return bool(frames) and ".variables()" in (frames[-1].line or "")


def hint(kind, value, traceback):
    """The hint's text for an uncaught exception, or None if it is not a known Keras 2 error."""
    if not _keras_3_in_use():
        return None
    message = str(value)
    known = any(kind.__name__ == name and text in message for name, text in KNOWN_ERRORS)
    if not (known or (kind.__name__ == "TypeError" and _variables_called(value, traceback))):
        return None
    script = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else "SCRIPT"
    return ("mpirep: this is a Keras 2 API, and tf.keras here is Keras 3. Run the script "
            f"unchanged on tf_keras ({install_command()}; mpirep-run --keras2, or "
            f"TF_USE_LEGACY_KERAS=1 for every rank), or port it: mpirep-port {script} "
            "(docs/porting.md)")
