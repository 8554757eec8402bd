"""Runs Horovod's own TensorFlow test files against mpirep and counts what passes.

    dev/horovod-conformance /path/to/horovod [--only tensorflow,keras3] [-k EXPR] [--np 2]

The files are copied from the Horovod checkout to a temporary folder and their imports of
Horovod are swapped for mpirep's (IMPORTS below; nothing else changes). Each file runs under
``timeout -k 10 T mpirun -np N python -m pytest``; the Keras file runs twice, with Keras 3 and
with tf_keras. Every rank records every report, subtests included (subtest_recorder.py). A test
passes only when every report of it passed or skipped on every rank and it ran to its end
everywhere. A test that outlives --test-timeout is recorded as hung, the job ends, and the file
runs again without the tests already decided. ``--keep DIR`` keeps the logs and records, and
``--records DIR`` counts such a run again.
"""

import argparse
import collections
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent

# Horovod module -> what the copied files import instead. mpirep.* is API that ported scripts
# use too; horovod_test_scaffold holds helpers that only the tests need (docs/testing.md).
IMPORTS = {
    "horovod.tensorflow": "mpirep.tensorflow",
    "horovod.tensorflow.keras": "mpirep.tensorflow.keras",
    "horovod.tensorflow.util": "mpirep.tensorflow.util",
    "horovod.keras": "mpirep.keras",
    "horovod.common.util": "horovod_test_scaffold",
    "horovod.runner.common.util.env": "horovod_test_scaffold",
    "horovod.runner.util.threads": "horovod_test_scaffold",
}

# (label, test file, extra environment); the Keras file counts as one file run twice.
RUNS = [
    ("tensorflow", "test_tensorflow.py", {}),
    ("keras3", "test_tensorflow2_keras.py", {"TF_USE_LEGACY_KERAS": "0"}),
    ("tf_keras", "test_tensorflow2_keras.py", {"TF_USE_LEGACY_KERAS": "1"}),
    ("process_sets", "test_tensorflow_process_sets.py", {}),
]
# Not counted: test_tensorflow.py under tf_keras, to show which of its failures under Keras 3
# come from its own Keras 3-incompatible code (--only tensorflow_tf_keras).
EXTRA_RUNS = [("tensorflow_tf_keras", "test_tensorflow.py", {"TF_USE_LEGACY_KERAS": "1"})]
SUPPORT_FILES = [("parallel", "base_test_tensorflow.py"), ("utils", "common.py")]
REQUIRED_MODULES = ["parameterized", "mock", "cloudpickle", "packaging"]
_IMPORT_LINE = re.compile(r"^(\s*)(from|import)\s+(horovod(?:\.\w+)*)(\s.*)?$")


def swap_imports(text, path):
    """``text`` with every import of a horovod module replaced by its IMPORTS entry."""
    lines = text.splitlines(keepends=True)
    for i, line in enumerate(lines):
        match = _IMPORT_LINE.match(line.rstrip("\n"))
        if not match:
            continue
        indent, keyword, module, rest = match.groups()
        if module not in IMPORTS:
            raise SystemExit(f"{path}:{i + 1}: no replacement for an import of {module}")
        lines[i] = f"{indent}{keyword} {IMPORTS[module]}{rest or ''}\n"
    return "".join(lines)


def prepare(horovod, work):
    """Copies the test files into work/parallel and work/utils with their imports swapped."""
    test_root = horovod / "test"
    files = [("parallel", name) for _, name, _ in RUNS] + SUPPORT_FILES
    for folder, name in dict.fromkeys(files):
        source = test_root / folder / name
        if not source.is_file():
            raise SystemExit(f"{source} not found: pass the root of a Horovod checkout")
        target = work / folder / name
        target.parent.mkdir(exist_ok=True)
        target.write_text(swap_imports(source.read_text(), source))
    shutil.copy(HERE / "horovod_test_scaffold.py", work / "utils")


def read_records(paths):
    """Per rank, the list of records its file holds."""
    records = {}
    for path in paths:
        rank = int(re.search(r"rank(\d+)", path.name).group(1))
        with open(path, encoding="utf-8") as stream:
            records[rank] = [json.loads(line) for line in stream if line.strip()]
    return records


class Verdicts:
    """What is known about each test of one run, merged over the jobs it took."""

    def __init__(self, ranks):
        self.ranks = ranks
        self.order = []
        self.result = {}  # nodeid -> (status, [reasons])

    def add_job(self, records, job_status, log_tail):
        """Takes the decided tests of one job; returns the nodeids still to run."""
        collected = next((r["nodeids"] for rank in records.values() for r in rank
                          if r["event"] == "collected"), None)
        if collected is None:
            return None
        for nodeid in collected:
            if nodeid not in self.order:
                self.order.append(nodeid)
        finished = collections.defaultdict(set)
        started = collections.defaultdict(set)
        reports = collections.defaultdict(list)
        hung = {}
        for rank, rank_records in records.items():
            for record in rank_records:
                event, nodeid = record["event"], record.get("nodeid")
                if event == "start":
                    started[nodeid].add(rank)
                elif event == "finish":
                    finished[nodeid].add(rank)
                elif event == "report":
                    reports[nodeid].append((rank, record))
                elif event == "hung":
                    hung[nodeid] = record["seconds"]
        all_ranks = set(range(self.ranks))
        culprit = None
        decided_before = len(self.result)
        for nodeid in collected:
            if finished[nodeid] == all_ranks:
                self.result[nodeid] = self._judge(reports[nodeid])
            elif started[nodeid] and culprit is None:
                culprit = nodeid
        if culprit is not None:
            if any(n in hung for n in collected[collected.index(culprit):]):
                reason = f"hung: no end after {max(hung.values()):.0f} s"
                status = "hung"
            else:
                reason = f"the job ended inside it (exit {job_status}): {log_tail}"
                status = "crashed"
            self.result[culprit] = (status, [reason])
        elif job_status != 0 and len(self.result) == decided_before:
            # The job ended before its first test: running it again would end the same way.
            for nodeid in collected:
                self.result.setdefault(nodeid, ("crashed", [f"job exit {job_status}: {log_tail}"]))
        return [n for n in collected if n not in self.result]

    @staticmethod
    def _judge(reports):
        """failed if any report failed; skipped if the test, or every subtest of it, skipped
        (a skipped subtest does not skip its test, so a GPU-only test run in graph and eager
        modes reports a passing test with two skipped subtests); passed otherwise."""
        failures = [f"rank {rank} {record['subtest'] or record['when']}: {record['message']}"
                    for rank, record in sorted(reports, key=lambda item: item[0])
                    if record["outcome"] == "failed"]
        if failures:
            return "failed", failures
        calls = [r for _, r in reports if r["when"] == "call"]
        subtests = [r for r in calls if r["subtest"] is not None]
        decisive = subtests or calls
        if decisive and all(r["outcome"] == "skipped" for r in decisive):
            return "skipped", [decisive[0]["message"]]
        return "passed", []


def run_file(label, test_file, env_extra, args, work):
    """Runs one test file until every collected test is decided; returns its Verdicts."""
    verdicts = Verdicts(args.np)
    deselect = []
    for attempt in range(1, args.max_jobs + 1):
        record_dir = work / "records" / f"{label}.{attempt}"
        record_dir.mkdir(parents=True)
        env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2",
                   CONFORMANCE_RECORD=str(record_dir / "rank{rank}.jsonl"),
                   CONFORMANCE_TEST_TIMEOUT=str(args.test_timeout),
                   PYTHONPATH=os.pathsep.join([str(HERE), str(work / "utils"),
                                               str(work / "parallel"),
                                               os.environ.get("PYTHONPATH", "")]))
        env.update(env_extra)
        command = ["timeout", "-k", "10", str(args.file_timeout), "mpirun", *_local_mpirun_args(),
                   "-np", str(args.np), sys.executable, "-m", "pytest",
                   "-p", "subtest_recorder", "-p", "no:cacheprovider", "-q",
                   "-o", "console_output_style=classic", str(work / "parallel" / test_file)]
        if args.k:
            command += ["-k", args.k]
        for nodeid in deselect:
            command += ["--deselect", nodeid]
        log_path = work / "logs" / f"{label}.{attempt}.log"
        log_path.parent.mkdir(exist_ok=True)
        with open(log_path, "w") as log:
            status = subprocess.run(command, cwd=work / "parallel", env=env, stdout=log,
                                    stderr=subprocess.STDOUT, start_new_session=True).returncode
        (record_dir / "status").write_text(str(status))
        tail = " | ".join(log_path.read_text(errors="replace").strip().splitlines()[-3:])[-400:]
        records = read_records(sorted(record_dir.glob("rank*.jsonl")))
        remaining = verdicts.add_job(records, status, tail)
        if remaining is None:
            raise SystemExit(f"{label}: pytest collected nothing (exit {status}); see {log_path}")
        print(f"  {label} job {attempt}: exit {status}, {len(remaining)} tests left",
              flush=True)
        if not remaining:
            return verdicts
        deselect = [n for n in verdicts.order if n in verdicts.result]
    for nodeid in verdicts.order:
        verdicts.result.setdefault(nodeid, ("not run", [f"more than {args.max_jobs} jobs"]))
    return verdicts


def _local_mpirun_args():
    """Open MPI needs leave to run more ranks than cores, and not to bind them; MPICH's
    launcher rejects those flags."""
    version = subprocess.run(["mpirun", "--version"], capture_output=True, text=True)
    if "Open MPI" in version.stdout + version.stderr:
        return ["--oversubscribe", "--bind-to", "none"]
    return []


def short(nodeid):
    return nodeid.split("::")[-1]


def report(all_verdicts):
    """Prints per-run counts, the failing tests, and the total with the Keras file counted
    once (a test of it passes only if it passed under both Keras 3 and tf_keras)."""
    counts = {}
    for label, verdicts in all_verdicts.items():
        tally = collections.Counter(status for status, _ in verdicts.result.values())
        counts[label] = tally
        print(f"\n{label}: " + ", ".join(f"{n} {s}" for s, n in sorted(tally.items())))
        for nodeid in verdicts.order:
            status, reasons = verdicts.result.get(nodeid, ("not run", []))
            if status not in ("passed", "skipped"):
                print(f"  {status.upper():8} {short(nodeid)}")
                for reason in reasons[:4]:
                    print(f"           {reason[:300]}")
    files = collections.OrderedDict()
    counted = {label for label, _, _ in RUNS}
    for label, verdicts in all_verdicts.items():
        if label not in counted:
            continue
        name = "keras" if label in ("keras3", "tf_keras") else label
        for nodeid, (status, _) in verdicts.result.items():
            files.setdefault(name, {}).setdefault(short(nodeid), []).append(status)
    passed = failed = 0
    print()
    for name, tests in files.items():
        combined = [_combined(statuses) for statuses in tests.values()]
        p, f = combined.count("passed"), combined.count("failed")
        passed, failed = passed + p, failed + f
        print(f"{name}: {p} passed, {f} failed")
    print(f"total: {passed} passed, {failed} failed")


def _combined(statuses):
    """One test's status over the runs of its file: the Keras file runs under Keras 3 and
    tf_keras, and many of its tests are written for one of them (docs/testing.md)."""
    if "passed" in statuses:
        return "passed"
    if all(s == "skipped" for s in statuses):
        return "skipped"
    return "failed"


def rejudge(args):
    """The verdicts of the runs recorded in --records, as run_file would have given them."""
    results = {}
    for label, _, _ in RUNS + EXTRA_RUNS:
        jobs = sorted((args.records / "records").glob(f"{label}.*"),
                      key=lambda d: int(d.name.split(".")[1]))
        if not jobs:
            continue
        verdicts = Verdicts(args.np)
        for job in jobs:
            status_file = job / "status"
            status = int(status_file.read_text()) if status_file.exists() else -1
            verdicts.add_job(read_records(sorted(job.glob("rank*.jsonl"))), status, "")
        results[label] = verdicts
    return results


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("horovod", type=Path, nargs="?",
                        help="root of a Horovod checkout (v0.28.1)")
    parser.add_argument("--only", help="comma-separated labels: " +
                        ",".join(label for label, _, _ in RUNS + EXTRA_RUNS))
    parser.add_argument("-k", help="pytest -k expression")
    parser.add_argument("--np", type=int, default=2)
    parser.add_argument("--test-timeout", type=float, default=600,
                        help="seconds one test may run before it counts as hung")
    parser.add_argument("--file-timeout", type=int, default=7200)
    parser.add_argument("--max-jobs", type=int, default=20)
    parser.add_argument("--keep", type=Path, help="work in this folder and keep it")
    parser.add_argument("--records", type=Path,
                        help="only count again the run kept in this folder (--keep)")
    args = parser.parse_args()
    if args.records:
        report(rejudge(args))
        return
    if args.horovod is None:
        parser.error("give the root of a Horovod checkout")
    missing = [m for m in REQUIRED_MODULES if not _importable(m)]
    if missing:
        raise SystemExit(f"Horovod's test files need {', '.join(missing)}: "
                         f"pip install {' '.join(missing)}")
    work = args.keep or Path(tempfile.mkdtemp(prefix="horovod-conformance-"))
    work.mkdir(parents=True, exist_ok=True)
    prepare(args.horovod.resolve(), work)
    labels = args.only.split(",") if args.only else [label for label, _, _ in RUNS]
    results = {}
    for label, test_file, env in RUNS + EXTRA_RUNS:
        if label in labels:
            print(f"{label}: running {test_file} at np={args.np}", flush=True)
            results[label] = run_file(label, test_file, env, args, work)
    report(results)
    print(f"\nlogs and records: {work}")


def _importable(module):
    try:
        __import__(module)
    except ImportError:
        return False
    return True


if __name__ == "__main__":
    main()
