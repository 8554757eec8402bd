"""Horovod scripts written for Keras 2 (tests/tf/horovod_scripts), either way: ported by
mpirep-port and run on Keras 3, or with only their imports ported and run on tf_keras (on a
TensorFlow whose tf.keras is Keras 2, on that). One mpirun per Keras runs every script."""
import shutil
import subprocess
import sys

import pytest

pytest.importorskip("tensorflow")

from keras_versions import KERAS_3, keras_env  # noqa: E402
from mpijob import REPO, build_op_library, job_env, mpirun  # noqa: E402

SCRIPTS = REPO / "tests" / "tf" / "horovod_scripts"
JOB = REPO / "tests" / "tf" / "jobs" / "scripts_job.py"
TRAINING = ("keras_fit.py", "gradient_tape.py")
TIMEOUT_S = 300
# What the checkpoints of keras_fit.py are called: Keras 3 names the format by the ending
WRITTEN = {"keras3": "final.weights.h5 model-1.keras model-2.keras model-3.keras "
                     "weights-1.weights.h5 weights-2.weights.h5 weights-3.weights.h5",
           "tf_keras": "final.h5 model-1.h5 model-2.h5 model-3.h5 "
                       "weights-1.h5 weights-2.h5 weights-3.h5"}
WRITTEN["keras2"] = WRITTEN["tf_keras"]
CASES = [("keras3", []), ("tf_keras", ["--keras2"])] if KERAS_3 else [("keras2", ["--keras2"])]


@pytest.fixture(scope="module", autouse=True)
def op_library():
    return build_op_library()


def ported(tmp_path, *flags):
    """A copy of the scripts, ported in place by mpirep-port with ``flags``."""
    scripts = tmp_path / "scripts"
    shutil.copytree(SCRIPTS, scripts)
    names = [str(scripts / name) for name in (*TRAINING, "horovod_run.py")]
    done = subprocess.run([sys.executable, "-m", "mpirep.port", "--in-place", *flags, *names],
                          cwd=REPO, env=job_env(), capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return scripts


@pytest.mark.parametrize("keras,flags", CASES)
def test_training_scripts_at_two_ranks(tmp_path, keras, flags):
    scripts = ported(tmp_path, *flags)
    out = tmp_path / "out"
    out.mkdir()
    job = mpirun(2, [JOB, out, *(scripts / name for name in TRAINING)], TIMEOUT_S,
                 env=keras_env(keras))
    assert job.returncode == 0, job.output[-6000:]
    assert job.output.count("gradient_tape: ok") == 1, job.output[-3000:]
    assert f"keras_fit: ok {WRITTEN[keras]}\n" in job.output, job.output[-3000:]


def test_horovod_run_script_after_porting(tmp_path):
    script = ported(tmp_path, *CASES[0][1]) / "horovod_run.py"
    assert "mpirep.run(train" in script.read_text()
    done = subprocess.run(["timeout", "-k", "10", str(TIMEOUT_S), sys.executable, str(script)],
                          cwd=tmp_path, env=job_env(keras_env(CASES[0][0])), text=True,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          timeout=TIMEOUT_S + 30)
    assert done.returncode == 0, done.stdout[-6000:]
    assert "horovod_run: ok [(0, 2, 6.0), (1, 2, 6.0)]" in done.stdout, done.stdout[-3000:]


@pytest.mark.skipif(not KERAS_3, reason="tf.keras is Keras 2 on this TensorFlow")
def test_a_keras_2_script_on_keras_3_gets_the_hint(tmp_path):
    """Only the imports ported, run on Keras 3 by mistake: opt.variables() fails inside the
    tf.function, and after the traceback the rank says what to do."""
    scripts = ported(tmp_path, "--keras2")
    job = mpirun(1, [scripts / "gradient_tape.py"], TIMEOUT_S, env=keras_env("keras3"))
    assert job.returncode != 0 and "'list' object is not callable" in job.output, job.output[-3000:]
    assert job.output.count("mpirep: this is a Keras 2 API, and tf.keras here is Keras 3. Run the "
                            "script unchanged on tf_keras (pip install 'tf_keras==") == 1, job.output[-3000:]
    assert "or port it: mpirep-port gradient_tape.py (docs/porting.md)" in job.output
