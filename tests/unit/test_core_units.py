"""The C++ unit tests of native/core (native/tests), built and run by buildtools/core_tests.py:
the ring, broadcast and every collective of the executor over an in-process transport with
1..8 ranks as threads, request validation, the fusion planner, negotiation bookkeeping, the
control-message encoding and the settings table. Built with AddressSanitizer and UBSan,
without MPI."""

import os
import pathlib
import shutil
import subprocess
import sys

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]


def test_core_units(tmp_path_factory):
    if shutil.which(os.environ.get("CXX", "g++")) is None:
        pytest.skip("no C++ compiler")
    cache = os.environ.get("MPIREP_TEST_BUILD_DIR") or str(tmp_path_factory.mktemp("core_tests"))
    result = subprocess.run([sys.executable, "-m", "buildtools.core_tests", cache], cwd=REPO,
                            capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-6000:]
    assert result.stdout.strip().endswith(" 0 failed"), result.stdout[-6000:]
