"""Autotuning in real jobs (jobs/autotune.py): results stay correct and bit-identical on every
rank while the settings change, the log has a row per trial, and every rank ends on the same
settings. Started by mpirep-run --autotune at 2 and 3 ranks, and by mpirun with Horovod's
variables."""
import pytest

from mpijob import mpirep_run, mpirun

JOB = "tests/multiproc/jobs/autotune.py"
TIMEOUT_S = 180
# Short trials: 1 warm-up and 2 scored samples of 2 steps each.
QUICK = {"MPIREP_AUTOTUNE_SAMPLES_PER_TRIAL": "2"}


def check(job, ranks):
    print(job.output[-3000:])
    assert not job.timed_out, f"the job hung: killed after {TIMEOUT_S} s"
    assert job.returncode == 0 and job.output.count("autotune ok") == ranks
    assert "autotune: " in job.output and " trials, final " in job.output


@pytest.mark.parametrize("ranks", [2, 3])
def test_mpirep_run_autotune(ranks, tmp_path):
    flags = ["--autotune", "--autotune-log-file", str(tmp_path / "autotune.csv"),
             "--autotune-warmup-samples", "1", "--autotune-steps-per-sample", "2"]
    check(mpirep_run(ranks, flags, [JOB], TIMEOUT_S, env=QUICK), ranks)


def test_horovod_variables(tmp_path):
    env = {**QUICK, "HOROVOD_AUTOTUNE": "1", "HOROVOD_AUTOTUNE_LOG": str(tmp_path / "autotune.csv"),
           "HOROVOD_AUTOTUNE_WARMUP_SAMPLES": "1", "HOROVOD_AUTOTUNE_STEPS_PER_SAMPLE": "2"}
    check(mpirun(2, [JOB], TIMEOUT_S, env=env), 2)


UNWRITABLE_LOG = """
import mpirep
try:
    mpirep.init(autotune=True, autotune_log="/nonexistent-dir/autotune.csv")
except mpirep.InvalidArgumentError as e:
    print(f"rank refused: {e}", flush=True)
"""


@pytest.mark.parametrize("ranks", [1, 2])
def test_unwritable_log_fails_every_rank(ranks):
    job = mpirun(ranks, ["-c", UNWRITABLE_LOG], 60)
    print(job.output[-3000:])
    assert not job.timed_out and job.returncode == 0
    refusal = "rank refused: rank 0: mpirep setting autotune_log: cannot write '/nonexistent-dir/autotune.csv'"
    assert job.output.count(refusal) == ranks, job.output
