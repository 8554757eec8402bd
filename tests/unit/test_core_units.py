"""The C++ unit tests of native/core (native/tests), built by buildtools/core_tests.py with
AddressSanitizer and UBSan, without MPI, and run one suite per test here, so that one suite can
be run alone (``pytest tests/unit/test_core_units.py -k ring``): the ring, broadcast and every
collective of the executor over an in-process transport with 1..8 ranks as threads, the
hierarchical allreduce on fake hosts, request validation, the fusion planner, negotiation
bookkeeping, the control-message encoding, autotuning and the settings table.

The binary is built once, when the suites are collected from its ``--list``, into
$MPIREP_TEST_BUILD_DIR or pytest's cache directory, and rebuilt only when native/ changed."""

import os
import shutil
import subprocess
import sys
import tempfile

import pytest

from mpijob import REPO

sys.path.insert(0, str(REPO))
from buildtools import core_tests  # noqa: E402

_binary = None


def _build_dir(config):
    if os.environ.get("MPIREP_TEST_BUILD_DIR"):
        return os.environ["MPIREP_TEST_BUILD_DIR"]
    if getattr(config, "cache", None) is not None:
        return str(config.cache.mkdir("core_tests"))
    return tempfile.mkdtemp(prefix="mpirep-core-tests-")


def _suites(config):
    """The suites of the binary's --list, in its order; builds the binary first."""
    global _binary
    os.makedirs(_build_dir(config), exist_ok=True)
    _binary = core_tests.build(_build_dir(config))
    listed = subprocess.run([_binary, "--list"], capture_output=True, text=True, check=True, timeout=60)
    return list(dict.fromkeys(line.split(".")[0] for line in listed.stdout.split()))


def pytest_generate_tests(metafunc):
    if "suite" not in metafunc.fixturenames:
        return
    if shutil.which(os.environ.get("CXX", "g++")) is None:
        metafunc.parametrize("suite", [pytest.param(None, marks=pytest.mark.skip(reason="no C++ compiler"))])
        return
    metafunc.parametrize("suite", _suites(metafunc.config))


def test_suite(suite):
    result = subprocess.run([_binary, suite], capture_output=True, text=True, timeout=600)
    report = result.stdout[-6000:] + result.stderr[-6000:]
    assert result.returncode == 0, report
    assert " 0 tests failed" in result.stdout, report
