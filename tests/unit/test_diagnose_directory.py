"""The diagnosis reads whatever a flight-record directory holds: records of several jobs, of
other sizes, files cut short or foreign. It diagnoses the latest job and lists the rest."""

import json
import subprocess
import sys

from mpirep import diagnose


def record(job, rank, size, time, **fields):
    return {"format": "mpirep flight record 2", "job": job, "rank": rank, "size": size,
            "pid": 100 + rank, "time": time, "reason": "requested",
            "hosts": [f"h{r % 2}" for r in range(size)], "silent": [], "in_flight": [],
            "waiting": [], "recent": [], **fields}


def write(directory, name, content):
    path = directory / name
    path.write_text(content if isinstance(content, str) else json.dumps(content))
    return path


def test_the_latest_job_is_diagnosed_and_the_earlier_ones_are_listed(tmp_path):
    # an earlier 3-rank job left rank0..2; the latest 2-rank job overwrote rank0 and rank1
    write(tmp_path, "rank0.json", record("h0-1-2000", 0, 2, 2000.0))
    write(tmp_path, "rank1.json", record("h0-1-2000", 1, 2, 2000.5,
                                         reason="this rank failed: ValueError: bad batch"))
    write(tmp_path, "rank2.json", record("h0-7-1000", 2, 3, 1000.0))
    records = diagnose.Records(str(tmp_path))
    assert records.job == "h0-1-2000"
    assert sorted(records.by_rank) == [0, 1]
    assert records.ignored == [("rank2.json", "another job (h0-7-1000, 3 ranks, written 1000 s earlier)")]
    lines = diagnose.Diagnosis(records.by_rank).lines()
    assert lines[0] == "Flight records of ranks 0, 1 of 2."
    assert lines[-1] == "Culprit: rank 1 on h1, which failed (above)."


def test_partial_foreign_and_inconsistent_files_are_ignored_with_why(tmp_path):
    good = record("h0-3-500", 0, 1, 500.0)
    write(tmp_path, "rank0.json", good)
    write(tmp_path, "rank1.json", json.dumps(record("h0-3-500", 1, 2, 500.0))[:57])  # cut short
    write(tmp_path, "rank2.json", {"rank": 2, "note": "someone else's file"})
    write(tmp_path, "rank3.json", record("h0-3-500", 3, 2, 500.0))                    # rank >= size
    write(tmp_path, "rank4.json", record("h0-3-500", 0, 2, 500.0, hosts=["h0"]))     # hosts short
    (tmp_path / "rank5.json").write_bytes(b"\xff\xfe not text")
    write(tmp_path, "rank6.json", "[1, 2, 3]")
    records = diagnose.Records(str(tmp_path))
    assert records.by_rank == {0: good}
    why = dict(records.ignored)
    assert sorted(why) == [f"rank{r}.json" for r in range(1, 7)]
    assert why["rank1.json"].startswith("not complete JSON")
    assert why["rank5.json"].startswith("not complete JSON")
    assert why["rank2.json"] == why["rank6.json"] == "not an mpirep flight record"
    assert why["rank3.json"] == why["rank4.json"] == (
        "a flight record with a missing or inconsistent rank, size, hosts or time")


def test_records_without_a_job_id_are_told_apart_by_size(tmp_path):
    old = {k: v for k, v in record("", 0, 3, 10.0).items() if k != "job"}
    write(tmp_path, "rank0.json", dict(old, format="mpirep flight record 1"))
    write(tmp_path, "rank1.json", record("h0-9-90", 1, 2, 90.0))
    records = diagnose.Records(str(tmp_path))
    assert records.job == "h0-9-90" and list(records.by_rank) == [1]
    assert records.ignored == [("rank0.json", "another job (unnamed, 3 ranks, written 80 s earlier)")]


def test_the_command_names_the_job_and_what_it_left_out(tmp_path):
    write(tmp_path, "rank0.json", record("h0-1-2000", 0, 2, 2000.0))
    write(tmp_path, "rank1.json", record("h0-1-2000", 1, 2, 2000.0))
    write(tmp_path, "rank2.json", "{\"format\": \"mpirep flight rec")
    done = subprocess.run([sys.executable, "-m", "mpirep.diagnose", str(tmp_path)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "Diagnosing job h0-1-2000; ignored:"
    assert lines[1].startswith("  rank2.json: not complete JSON")
    assert lines[2] == "Flight records of ranks 0, 1 of 2."


def test_a_directory_with_nothing_usable_says_so(tmp_path):
    write(tmp_path, "rank0.json", "")
    done = subprocess.run([sys.executable, "-m", "mpirep.diagnose", str(tmp_path)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert done.stdout.splitlines() == ["Ignored:", "  rank0.json: not complete JSON "
                                        "(Expecting value: line 1 column 1 (char 0))"]
    assert "no flight records" in done.stderr
