"""Builds and runs the C++ unit tests of the core's MPI-free parts (native/tests): the ring
over an in-process transport with 1..8 ranks as threads, the fusion planner, negotiation
bookkeeping and the control-message encoding. Built with AddressSanitizer and UBSan."""

import hashlib
import os
import pathlib
import shutil
import subprocess

import pytest

NATIVE = pathlib.Path(__file__).resolve().parents[2] / "native"
CORE_SOURCES = ["ring.cc", "reduce.cc", "common.cc", "fusion.cc", "coordinator.cc", "message.cc"]
FLAGS = ["-std=c++17", "-O0", "-g", "-fsanitize=address,undefined", "-fno-sanitize-recover=undefined"]


def _sources():
    return sorted(NATIVE.glob("tests/*.cc")) + [NATIVE / s for s in CORE_SOURCES]


def _build(directory):
    """Compiles each source in parallel and links; returns the binary's path."""
    digest = hashlib.sha256()
    for path in sorted(NATIVE.glob("*.h")) + sorted(NATIVE.glob("tests/*.h")) + _sources():
        digest.update(path.read_bytes())
    binary = directory / f"core_tests-{digest.hexdigest()[:16]}"
    if binary.exists():
        return binary
    compiler = os.environ.get("CXX", "g++")
    objects, jobs = [], []
    for source in _sources():
        obj = directory / (source.parent.name + "_" + source.stem + ".o")
        objects.append(str(obj))
        jobs.append(subprocess.Popen([compiler, *FLAGS, f"-I{NATIVE}", "-c", str(source), "-o", str(obj)],
                                     stderr=subprocess.PIPE, text=True))
    errors = [job.communicate()[1] for job in jobs if job.wait() != 0]
    assert not errors, "\n".join(errors)
    subprocess.run([compiler, *FLAGS, *objects, "-o", str(binary), "-lpthread"], check=True)
    return binary


@pytest.fixture(scope="module")
def core_tests(tmp_path_factory):
    if shutil.which(os.environ.get("CXX", "g++")) is None:
        pytest.skip("no C++ compiler")
    cache = pathlib.Path(os.environ.get("MPIREP_TEST_BUILD_DIR", tmp_path_factory.mktemp("core_tests")))
    cache.mkdir(parents=True, exist_ok=True)
    return _build(cache)


def test_core_units(core_tests):
    result = subprocess.run([str(core_tests)], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.strip().endswith("0 failed"), result.stdout
