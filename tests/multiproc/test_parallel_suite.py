"""Run tests/parallel on 1, 2, 3 and 4 ranks; each rank runs every test."""
from pathlib import Path

import pytest

from mpijob import mpirun

TIMEOUT_S = {1: 120, 2: 150, 3: 180, 4: 210}


def rank_reports(report_dir):
    return "\n".join(f"##### {p.name}\n{p.read_text()}" for p in sorted(Path(report_dir).glob("rank*.txt")))


@pytest.mark.parametrize("np_", [1, 2, 3, 4])
def test_parallel_suite(np_, tmp_path):
    job = mpirun(np_, ["-m", "pytest", "tests/parallel", "-q", "-p", "no:cacheprovider",
                       "--color=no"], TIMEOUT_S[np_],
                 env={"MPIREP_TEST_REPORT_DIR": str(tmp_path)})
    print(f"np={np_}: exit {job.returncode} after {job.seconds:.1f} s")
    print(job.output[-4000:])
    assert not job.timed_out, (f"np={np_} hung: killed after {TIMEOUT_S[np_]} s\n"
                               f"{rank_reports(tmp_path)}")
    assert job.returncode == 0, f"np={np_} failed\n{rank_reports(tmp_path)}"
