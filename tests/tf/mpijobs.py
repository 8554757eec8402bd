"""Runs a job script under mpirun with a hard time bound (timeout -k, then a process-group kill)."""

import os
import re
import signal
import subprocess
import sys
from importlib import metadata
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
JOBS = Path(__file__).resolve().parent / "jobs"
# An mpirun started from inside another MPI job must not inherit its launcher's variables.
_LAUNCHER_PREFIXES = ("OMPI_", "PMIX_", "PMI_", "ORTE_", "OPAL_")


def environment(extra=None):
    env = {k: v for k, v in os.environ.items() if not k.startswith(_LAUNCHER_PREFIXES)}
    env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_btl_tcp_if_include="lo", OMPI_MCA_oob_tcp_if_include="lo",
               TF_CPP_MIN_LOG_LEVEL="2")
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(REPO), str(JOBS), env.get("PYTHONPATH")) if p)
    env.update(extra or {})
    return env


def mpirun(ranks, script, *args, timeout_s=240, env=None):
    """Returns (exit status, combined output) of ``mpirun -np ranks python script args``."""
    command = ["timeout", "-k", "10", str(timeout_s), "mpirun", "--oversubscribe",
               "--bind-to", "none", "-np", str(ranks), sys.executable, str(script), *args]
    process = subprocess.Popen(command, cwd=REPO, env=environment(env), text=True,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               start_new_session=True)
    try:
        output, _ = process.communicate(timeout=timeout_s + 30)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        output, _ = process.communicate()
        return -9, output
    return process.returncode, output


def assert_passed(status, output, ranks):
    """A job passed: exit 0 and its closing line reports no failed checks."""
    summary = re.search(rf"(\d+) checks on {ranks} ranks, (\d+) failures", output)
    assert status == 0 and summary and summary.group(2) == "0", output[-6000:]


def build_op_library():
    """Builds the TF op library once, before jobs whose ranks would otherwise wait on it."""
    subprocess.run([sys.executable, "-c", "from mpirep.tensorflow import _native_build as b; "
                    "b.library_path()"], cwd=REPO, env=environment(), check=True, timeout=300)


def _keras_major():
    try:
        return int(metadata.version("keras").split(".")[0])
    except metadata.PackageNotFoundError:
        return 0


# From TensorFlow 2.16 on tf.keras is Keras 3, or tf_keras under TF_USE_LEGACY_KERAS=1; before,
# it is the Keras 2 that TensorFlow pins, whatever the variable says.
KERAS_3 = _keras_major() >= 3


def keras_cases(cases):
    """The (ranks, keras) cases that differ on the installed TensorFlow: where tf.keras is
    Keras 2, the "keras3" cases run on it as "keras2", and the "tf_keras" ones, which would run
    the same Keras again, are left out."""
    if KERAS_3:
        return cases
    return [(ranks, "keras2") for ranks, keras in cases if keras == "keras3"]


def keras_env(keras):
    """The environment that makes tf.keras the Keras a case names."""
    return {"TF_USE_LEGACY_KERAS": "1" if keras == "tf_keras" else "0"}
