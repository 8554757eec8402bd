"""mpirep.tensorflow end to end: each test starts one mpirun job that runs many checks."""

import json
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("tensorflow")

from keras_versions import keras_cases, keras_env  # noqa: E402
import trace_events  # noqa: E402
from mpijob import REPO, assert_passed, build_op_library, job_env, mpirun  # noqa: E402

JOBS = REPO / "tests" / "tf" / "jobs"
TIMEOUT_S = 240
# How soon a job in which a rank failed must end: far above what ending takes on a loaded
# machine, far below TIMEOUT_S, which a job whose survivors waited would run into.
FAILED_JOB_BOUND_S = 30


@pytest.fixture(scope="session", autouse=True)
def op_library():
    return build_op_library()


def copying_compiler(library):
    """Environment in which building the op library copies ``library`` instead of compiling:
    for tests of what triggers a build and what it prints, not of the compile itself."""
    return {"CXX": f"{sys.executable} {Path(__file__).parent / 'copying_compiler.py'}",
            "MPIREP_TEST_BUILT_LIBRARY": str(library)}


@pytest.mark.parametrize("ranks", [1, 2, 3])
def test_ops_native_bridge(ranks):
    env = {"MPIREP_TF_BRIDGE": "native"}  # a library that fails to build or load fails the test
    assert_passed(mpirun(ranks, [JOBS / "ops_job.py"], TIMEOUT_S, env=env), ranks)


def test_ops_numpy_bridge():
    assert_passed(mpirun(2, [JOBS / "ops_job.py"], TIMEOUT_S, env={"MPIREP_TF_BRIDGE": "numpy"}),
                  2)


COMPILING = "mpirep: compiling the TensorFlow op library for TensorFlow "
READY = "mpirep: the TensorFlow op library is ready"


def test_the_first_build_is_announced_by_one_rank(tmp_path, op_library):
    env = {"MPIREP_CACHE_DIR": str(tmp_path), "MPIREP_TF_BRIDGE": "native",
           **copying_compiler(op_library)}
    first = mpirun(3, [JOBS / "first_use_job.py"], TIMEOUT_S, env=env)
    assert_passed(first, 3)
    assert first.output.count(COMPILING) == 1 and first.output.count(READY) == 1, first.output
    assert re.search(COMPILING + rf"[\d.]+ into {re.escape(str(tmp_path))}/tf-[^ ]+\. This takes "
                     r"about half a minute, once: later runs with this TensorFlow reuse it",
                     first.output), first.output
    again = mpirun(2, [JOBS / "first_use_job.py"], TIMEOUT_S, env=env)
    assert_passed(again, 2)
    assert COMPILING not in again.output and READY not in again.output, again.output


def test_building_ahead_with_check_build_or_the_build_command(tmp_path, op_library):
    env = job_env({"MPIREP_CACHE_DIR": str(tmp_path), "MPIREP_TF_BRIDGE": "native",
                   **copying_compiler(op_library)})
    checked = subprocess.run([sys.executable, "-m", "mpirep.launch", "--check-build",
                              "--build-tf-ops"], cwd=REPO, env=env, capture_output=True,
                             text=True, timeout=900)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "mpirep-run: building the TensorFlow op library" in checked.stderr
    built = re.search(r"^\[x\] TensorFlow op library: (.*)$", checked.stdout, re.M)
    assert built and Path(built.group(1)).is_file(), checked.stdout
    assert Path(built.group(1)).parent.parent == tmp_path
    command = subprocess.run([sys.executable, "-m", "mpirep.tensorflow.build"], cwd=REPO, env=env,
                             capture_output=True, text=True, timeout=300)
    assert command.returncode == 0 and command.stdout.strip() == built.group(1), command.stderr
    assert COMPILING not in command.stderr, command.stderr  # built already
    job = mpirun(2, [JOBS / "first_use_job.py"], TIMEOUT_S, env=env)
    assert_passed(job, 2)
    assert COMPILING not in job.output, job.output


def test_the_build_command_compiles_and_fails_with_the_compilers_words(tmp_path):
    env = job_env({"MPIREP_CACHE_DIR": str(tmp_path), "CXX": "false"})
    done = subprocess.run([sys.executable, "-m", "mpirep.tensorflow.build"], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 1 and done.stdout == "", done.stdout
    assert done.stderr.count(COMPILING) == 1, done.stderr
    assert "mpirep: the TensorFlow op library for TensorFlow " in done.stderr
    assert "could not be built" in done.stderr, done.stderr


def test_fallback_warns_once_when_the_library_cannot_build(tmp_path):
    job = mpirun(1, [JOBS / "ops_job.py"], TIMEOUT_S,
                 env={"MPIREP_CACHE_DIR": str(tmp_path), "CXX": "false"})
    assert_passed(job, 1)
    assert job.output.count("could not be built or loaded") == 1, job.output[-3000:]


@pytest.mark.parametrize("ranks,bridge", [(2, "native"), (3, "native"), (2, "numpy")])
def test_join_with_uneven_work(ranks, bridge):
    assert_passed(mpirun(ranks, [JOBS / "join_job.py"], TIMEOUT_S,
                         env={"MPIREP_TF_BRIDGE": bridge}), ranks)


@pytest.mark.parametrize("bridge", ["native", "numpy"])
def test_process_sets(bridge):
    assert_passed(mpirun(3, [JOBS / "process_sets_job.py"], TIMEOUT_S,
                         env={"MPIREP_TF_BRIDGE": bridge}), 3)


@pytest.mark.parametrize("ranks,keras", keras_cases([(3, "keras3"), (2, "tf_keras")]))
def test_sync_batch_normalization(ranks, keras):
    assert_passed(mpirun(ranks, [JOBS / "sync_bn_job.py"], TIMEOUT_S, env=keras_env(keras)), ranks)


@pytest.mark.parametrize("ranks,keras", keras_cases([(2, "keras3"), (2, "tf_keras")]))
def test_training(ranks, keras):
    assert_passed(mpirun(ranks, [JOBS / "training_job.py"], 300, env=keras_env(keras)), ranks)


# At 2 ranks: one-rank process sets (the plain optimizer), a checkpoint resharded from 2 ranks
# to 1; tf_keras's wrapper in the same job. At 4 ranks: the state at 1/4 per rank, slices cut
# across variables by 4, and a checkpoint saved at 4 ranks resharded to 3 and 2, where training
# resumes. The whole job
# passes at 1, 3 and 4 ranks too (docs/zero.md).
@pytest.mark.parametrize("ranks,keras,checks", keras_cases([
    (2, "keras3", []),
    (4, "keras3", ["fit_matches_distributed_optimizer", "state_is_one_over_np_on_a_deep_stack",
                   "whole_variables_and_small_buckets_match_distributed_optimizer",
                   "checkpoint_is_a_plain_optimizers_and_reshards"])]),
    ids=lambda value: ("some" if value else "all") if isinstance(value, list) else None)
def test_zero_redundancy_optimizer(ranks, keras, checks):
    assert_passed(mpirun(ranks, [JOBS / "zero_job.py", *checks], TIMEOUT_S, env=keras_env(keras)),
                  ranks)


@pytest.mark.parametrize("ranks,keras", keras_cases([(1, "keras3"), (1, "tf_keras"),
                                                     (2, "keras3")]))
def test_one_rank_reduces_no_gradient(ranks, keras):
    env = {**keras_env(keras), "MPIREP_TF_BRIDGE": "native"}  # the graphs hold its op
    assert_passed(mpirun(ranks, [JOBS / "one_rank_job.py"], TIMEOUT_S, env=env), ranks)


@pytest.mark.parametrize("ranks,keras", keras_cases([(2, "keras3"), (3, "tf_keras")]))
def test_local_variables_accumulation_and_tf1_optimizers(ranks, keras):
    assert_passed(mpirun(ranks, [JOBS / "local_variables_job.py"], 300, env=keras_env(keras)), ranks)


@pytest.mark.parametrize("script", ["keras_mnist.py", "tf2_custom_loop.py",
                                    "horovod_port/tensorflow2_keras_mnist.py"])
def test_example_at_two_ranks(script):
    job = mpirun(2, [REPO / "examples" / script, "--epochs", "2"], 200)
    assert job.returncode == 0, job.output[-6000:]
    assert len(re.findall(r"^final loss", job.output, re.M)) == 1, job.output[-3000:]  # rank 0 only


def test_weights_bit_identical_after_1000_steps_at_three_ranks():
    assert_passed(mpirun(3, [JOBS / "determinism_job.py"], 400), 3)


@pytest.mark.parametrize("mode,survivors_read", [
    ("raise", "rank 1 failed: RuntimeError: rank 1 raised in the middle of training"),
    ("exit", "rank 1 shut down (it called shutdown() or its process exited)")], ids=["raise", "exit"])
def test_a_rank_failing_inside_fit_ends_the_job(mode, survivors_read, tmp_path):
    """The job ends, non-zero, soon after rank 1 fails, and the survivors' errors name rank 1."""
    job = mpirun(3, [JOBS / "rank_fails_in_fit_job.py", mode, tmp_path], TIMEOUT_S)
    ended = time.time()
    failing = tmp_path / "failing.txt"
    assert failing.exists() and job.returncode != 0, job.output[-6000:]
    assert ended - float(failing.read_text()) < FAILED_JOB_BOUND_S, job.output[-6000:]
    for survivor in (0, 2):  # as tf errors
        record = tmp_path / f"rank{survivor}.txt"
        assert record.exists(), job.output[-6000:]
        assert record.read_text().startswith("AbortedError: ") and survivors_read in record.read_text()


def test_a_frozen_rank_inside_fit_ends_the_job(tmp_path):
    """Rank 1 stops (SIGSTOP) inside fit: the others end the job within the peer timeout, and
    their flight records (files, which a launcher ending the job cannot cut) name it."""
    peer_timeout_s = 5
    records, flight = tmp_path / "records", tmp_path / "flight"
    records.mkdir()
    job = mpirun(3, [JOBS / "rank_fails_in_fit_job.py", "freeze", records], TIMEOUT_S,
                 env={"MPIREP_PEER_TIMEOUT_SECONDS": str(peer_timeout_s),
                      "MPIREP_FLIGHT_RECORDER_DIR": str(flight)})
    ended = time.time()
    failing = records / "failing.txt"
    assert failing.exists() and job.returncode != 0 and not job.timed_out, job.output[-6000:]
    assert ended - float(failing.read_text()) < peer_timeout_s + FAILED_JOB_BOUND_S, job.output[-6000:]
    assert sorted(p.name for p in flight.iterdir()) == ["rank0.json", "rank2.json"], job.output[-6000:]
    reasons = [json.loads((flight / f"rank{r}.json").read_text())["reason"] for r in (0, 2)]
    assert any(re.search(rf"rank 1 on \S+ has not answered for {peer_timeout_s} s", r) for r in reasons), reasons


def test_timeline_of_keras_training_started_at_run_time(tmp_path):
    path = tmp_path / "keras.json"
    job = mpirun(2, [JOBS / "timeline_job.py", path], TIMEOUT_S)
    assert job.returncode == 0 and job.output.count("timeline job done") == 2, job.output[-6000:]
    events = trace_events.load(path)
    tracks = trace_events.tracks(events)
    # Dense(5) and Dense(2): kernels and biases, one gradient each, in every one of the 4 steps;
    # each gradient is a group of one (named after its index), so its tensor is member 0
    sizes = {"gradients.0.0": 3 * 5, "gradients.1.0": 5, "gradients.2.0": 5 * 2,
             "gradients.3.0": 2}
    assert set(tracks) == set(sizes), sorted(tracks)
    for name, spans in tracks.items():
        operations = trace_events.operations(spans)
        assert len(operations) == 4, (name, operations)
        for operation in operations:
            phases = [span["name"] for span in operation]
            # The epoch before the timeline negotiated every gradient, so a step may run them
            # from the response cache: then they skip rank 0, with no NEGOTIATE or QUEUE phase.
            negotiated = phases[:1] == ["NEGOTIATE"]
            collective = phases[2:] if negotiated else phases
            # alone or fused, through shared memory, which reads the inputs where they lie and
            # writes straight into the outputs: no PACK, no UNPACK
            assert collective == ["SHM_ALLREDUCE"], (name, phases)
            if negotiated:
                assert phases[1] == "QUEUE" and operation[0]["args"]["last_rank"] in (0, 1), (name, phases)
            assert operation[-1]["args"]["tensor_bytes"] == 4 * sizes[name]
    assert trace_events.cycles(events)


# jit_compile on the CPU through mpirep's XLA kernels, Keras 3's "auto" with a GPU listed, and
# the errors that name the fix (docs/tensorflow.md, "XLA and GPU nodes"). Where the kernels
# cannot be built (TensorFlow 2.12) the job checks the fallback instead.
@pytest.mark.parametrize("ranks", [1, 2, 3])
def test_collectives_and_training_under_xla(ranks, tmp_path):
    path = tmp_path / "xla.json"
    job = mpirun(ranks, [JOBS / "xla_job.py", path], 300)
    assert_passed(job, ranks)
    if ranks == 1 or not path.exists():
        return  # one rank reduces no gradient; without the kernels nothing is jitted
    # The jitted step's one custom call hands the core all four gradients (Dense(16), Dense(1):
    # kernels and biases) as one group, named as graph mode names a group, once per step. They
    # run fused when they reach a round together, which is usual but not guaranteed.
    tracks = trace_events.tracks(trace_events.load(path))
    assert set(tracks) == {f"gradients.0.{i}" for i in range(4)}, sorted(tracks)
    steps = 96 // ranks // 8
    for name, spans in tracks.items():
        operations = trace_events.operations(spans)
        assert len(operations) == steps, (name, operations)
        for operation in operations:
            assert 1 <= operation[-1]["args"]["fused_tensors"] <= 4, (name, operation)


def test_xla_compiled_before_init_names_the_fix():
    assert_passed(mpirun(1, [JOBS / "xla_late_init_job.py"], TIMEOUT_S), 1)


def test_stall_shutdown_is_deadline_exceeded_on_every_rank():
    env = {"MPIREP_STALL_SHUTDOWN_TIME_SECONDS": "2", "MPIREP_TF_BRIDGE": "native"}
    assert_passed(mpirun(3, [JOBS / "stall_job.py"], TIMEOUT_S, env=env), 3)
