"""A pytest plugin that makes every rank agree on each test's outcome.

After each phase (setup, call, teardown) of each test, the ranks exchange pass/fail on a
communicator of their own. A rank that passed while another failed reports the test as failed
too, naming the failing ranks, so that all ranks go on (or skip the test body) together. Every
rank's failure text is gathered, so rank 0's report alone shows them all.

A rank that failed waits for the others only up to a deadline: if they are stuck in a
collective the failed rank will never join, it prints its failure and aborts the whole job.
When MPIREP_TEST_REPORT_DIR is set, each rank also appends its own failures to rank<N>.txt there.
Only rank 0 prints pytest's report. Load it with `-p verdict`, or import its pytest_configure
into a conftest.
"""
import os
import sys
import time
from pathlib import Path

import numpy as np
import pytest


class RankVerdict:
    def __init__(self, comm, deadline_s, report_dir=None):
        self.comm = comm
        self.deadline_s = deadline_s
        self.report_file = Path(report_dir) / f"rank{comm.rank}.txt" if report_dir else None

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item, call):
        outcome = yield
        report = outcome.get_result()
        failed_here = report.failed
        if failed_here:
            self._record(report)
        flags = self._exchange_flags(failed_here, report)
        failed_ranks = [r for r, flag in enumerate(flags) if flag]
        if not failed_ranks:
            return
        texts = self.comm.allgather(report.longreprtext if failed_here else "")
        lines = [f"{report.when} failed on rank(s) {failed_ranks} of {self.comm.size}"]
        for r in failed_ranks:
            lines.append(f"----- rank {r} -----\n{texts[r]}")
        report.outcome = "failed"
        report.longrepr = "\n".join(lines)

    def _exchange_flags(self, failed_here, report):
        mine = np.array([int(failed_here)], dtype=np.int32)
        flags = np.zeros(self.comm.size, dtype=np.int32)
        # Nonblocking on every rank: MPI never matches a blocking collective with a nonblocking one.
        request = self.comm.Iallgather(mine, flags)
        if not failed_here:
            request.Wait()
            return flags
        deadline = time.monotonic() + self.deadline_s
        while not request.Test():
            if time.monotonic() > deadline:
                self._abort(report)
            time.sleep(0.01)  # a failed rank polls for the others; not on the passing path
        return flags

    def _abort(self, report):
        message = (f"rank {self.comm.rank}: {report.nodeid} failed ({report.when}) and the other "
                   f"ranks did not reach the verdict within {self.deadline_s} s; aborting the job.\n"
                   f"{report.longreprtext}\n")
        sys.stderr.write(message)
        sys.stderr.flush()
        self.comm.Abort(1)

    def _record(self, report):
        if self.report_file is None:
            return
        with open(self.report_file, "a") as f:
            f.write(f"===== {report.nodeid} ({report.when}) on rank {self.comm.rank}\n")
            f.write(report.longreprtext + "\n")


@pytest.hookimpl(trylast=True)  # after pytest has registered its terminal reporter
def pytest_configure(config):
    from mpi4py import MPI

    comm = MPI.COMM_WORLD.Dup()
    deadline_s = float(os.environ.get("MPIREP_TEST_VERDICT_TIMEOUT", "60"))
    config.pluginmanager.register(
        RankVerdict(comm, deadline_s, os.environ.get("MPIREP_TEST_REPORT_DIR")),
        "mpirep-rank-verdict")
    if comm.rank != 0:
        config.pluginmanager.unregister(name="terminalreporter")
