"""Reads the flight records of a job's ranks and says, in plain words, what went wrong: which
ranks stopped answering or were cut off, which collectives the others waited in and for how
long, and which ranks never reached them.

    python -m mpirep.diagnose DIR        (or: mpirep-run --diagnose DIR)

DIR holds ``rank<N>.json``, one per rank that could write it (setting ``flight_recorder_dir``;
docs/reliability.md). A rank that wrote none was frozen, killed, or on a host that could not
be reached when the job ended. Records of earlier jobs in DIR, and files that are not whole
flight records, are listed and left out. Standard library only: the launcher runs it too.
"""
import collections
import glob
import json
import os
import sys


FORMAT = "mpirep flight record"


class Records:
    """The flight records in a directory that belong to its latest job.

    A directory the records default to (the working directory) collects records of several
    jobs over time, of other sizes too, and files cut short when a host went down. Each record
    names its job, so those of the latest job (the one whose newest record is newest) are
    diagnosed together, and every other file is listed as ignored, with why.
    """

    def __init__(self, directory):
        self.by_rank = {}
        self.job = None
        self.ignored = []  # (file name, why)
        jobs = collections.defaultdict(dict)  # job -> rank -> (file name, record)
        for path in sorted(glob.glob(os.path.join(directory, "rank*.json"))):
            name = os.path.basename(path)
            record, why = _read(path)
            if record is None:
                self.ignored.append((name, why))
            else:
                jobs[_job_of(record)][record["rank"]] = (name, record)
        if not jobs:
            return
        latest = max(jobs, key=lambda job: max(r["time"] for _, r in jobs[job].values()))
        self.job = latest[0]
        self.by_rank = {rank: record for rank, (_, record) in jobs[latest].items()}
        newest = max(r["time"] for r in self.by_rank.values())
        for (job, size), ranks in jobs.items():
            if (job, size) != latest:
                for name, record in ranks.values():
                    self.ignored.append((name, f"another job ({job}, {size} ranks, written "
                                               f"{newest - record['time']:.0f} s earlier)"))
        self.ignored.sort()

    def header(self):
        """Which job is diagnosed and what was ignored; empty where nothing was."""
        if not self.ignored:
            return []
        return ([f"Diagnosing job {self.job}; ignored:"] if self.job else ["Ignored:"]) + \
            [f"  {name}: {why}" for name, why in self.ignored]


def _job_of(record):
    """(job id, size): records written before jobs were named carry no id, and their size
    still tells some jobs apart."""
    return record.get("job") or "unnamed", record["size"]


def _read(path):
    """(record, "") or (None, why it is not a usable flight record)."""
    try:
        with open(path, "rb") as f:
            record = json.loads(f.read().decode("utf-8"))
    except OSError as error:
        return None, f"unreadable ({error.strerror})"
    except ValueError as error:
        return None, f"not complete JSON ({error})"
    if not isinstance(record, dict) or not str(record.get("format", "")).startswith(FORMAT):
        return None, "not an mpirep flight record"
    rank, size, hosts = record.get("rank"), record.get("size"), record.get("hosts")
    if not (isinstance(rank, int) and isinstance(size, int) and 0 <= rank < size
            and isinstance(hosts, list) and len(hosts) == size
            and isinstance(record.get("time"), (int, float))):
        return None, "a flight record with a missing or inconsistent rank, size, hosts or time"
    return record, ""


def load(directory):
    """{rank: record} of the latest job's flight records in ``directory``."""
    return Records(directory).by_rank


def _ranks(ranks):
    ranks = sorted(ranks)
    return ("ranks " if len(ranks) > 1 else "rank ") + ", ".join(map(str, ranks))


def _on_hosts(ranks, hosts):
    """"ranks 2, 3 on h2" or "ranks 1 on h1 and 3 on h2"."""
    by_host = collections.defaultdict(list)
    for r in sorted(ranks):
        by_host[hosts[r] if r < len(hosts) else "?"].append(r)
    parts = [", ".join(map(str, rs)) + " on " + host for host, rs in by_host.items()]
    return ("ranks " if len(ranks) > 1 else "rank ") + " and ".join(parts)


def _bytes(n):
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1024


class Diagnosis:
    def __init__(self, records):
        self.records = records
        some = next(iter(records.values()))
        self.size = max(r["size"] for r in records.values())
        self.hosts = some["hosts"]
        self.silent_ranks = self._silent()

    def _silent(self):
        """rank -> the ranks that found it silent (not those that were only told)."""
        found = collections.defaultdict(set)
        for rank, record in self.records.items():
            for peer in record.get("silent", []):
                found[peer["rank"]].add(rank)
        return found

    def lines(self):
        out = [self._who_wrote()]
        out += self._losses()
        out += self._failures()
        out += self._waits()
        out.append(self._culprit())
        return out

    def _who_wrote(self):
        missing = [r for r in range(self.size) if r not in self.records]
        text = f"Flight records of {_ranks(self.records)} of {self.size}"
        if missing:
            text += (f"; {_on_hosts(missing, self.hosts)} wrote none (frozen, killed, or "
                     "unreachable when the job ended)")
        return text + "."

    def _losses(self):
        out = []
        for rank, record in sorted(self.records.items()):
            silent = record.get("silent", [])
            if silent:
                seconds = max(p["seconds"] for p in silent)
                peers = _on_hosts([p["rank"] for p in silent], self.hosts)
                if record.get("cut_off"):
                    what = f"heard from none of its neighbours ({peers}) for {seconds:.1f} s"
                else:
                    what = f"lost {peers}: no answer for {seconds:.1f} s"
                out.append(f"  rank {rank} on {self.hosts[rank]} {what}")
            elif record.get("told_by", -1) >= 0:
                out.append(f"  rank {rank} on {self.hosts[rank]} was told by rank "
                           f"{record['told_by']} that {_on_hosts(record['reported'], self.hosts)} "
                           "stopped answering")
        return (["Lost peers:"] + out) if out else []

    def _failures(self):
        out = []
        for rank, record in sorted(self.records.items()):
            reason = record.get("reason", "")
            if reason.startswith("this rank failed: "):
                out.append(f"  rank {rank} on {self.hosts[rank]} failed: "
                           f"{reason[len('this rank failed: '):]}")
            elif reason and not reason.startswith(("peer timeout", "requested")):
                out.append(f"  rank {rank}: {reason.splitlines()[0]}")
        return (["Errors:"] + sorted(set(out))) if out else []

    def _waits(self):
        """Each collective some rank had in flight: who waited, how long, and who never
        reached it."""
        waits = collections.defaultdict(dict)  # name -> rank -> entry
        for rank, record in self.records.items():
            for entry in record.get("in_flight", []):
                waits[entry["name"]][rank] = (entry, record["time"] - entry["submitted"])
        out = []
        for name, by_rank in sorted(waits.items(), key=lambda item: -max(w for _, w in item[1].values())):
            entry = next(iter(by_rank.values()))[0]
            longest = max(w for _, w in by_rank.values())
            text = (f"  {entry['collective']} '{name}' ({entry['dtype']}, {_bytes(entry['bytes'])}): "
                    f"{_ranks(by_rank)} waited up to {longest:.1f} s")
            absent = self._never_reached(name, by_rank)
            reached = [r for r in absent if r in self.records]
            unknown = [r for r in absent if r not in self.records]
            if reached:
                text += f"; {_on_hosts(reached, self.hosts)} never reached it"
            if unknown:
                text += f"; {_ranks(unknown)}, with no record, did not run it with them"
            out.append(text)
        return (["In flight when the records were written:"] + out[:10]) if out else []

    def _never_reached(self, name, by_rank):
        """Ranks of the job that had `name` neither in flight nor just finished (rank 0's
        record says who was missing where it negotiated the tensor)."""
        for record in self.records.values():
            for waiting in record.get("waiting", []):
                if waiting["name"] == name:
                    return waiting["missing"]
        done = {rank for rank, record in self.records.items()
                if any(e["name"] == name for e in record.get("recent", [])[-50:])}
        return [r for r in range(self.size) if r not in by_rank and r not in done]

    def _culprit(self):
        partition = self._partition()
        if partition:
            cut, rest = partition
            return (f"Culprit: the link between {', '.join(cut)} and {', '.join(rest)}: each "
                    f"side lost every rank of the other; {', '.join(cut)} "
                    f"({_ranks(self._ranks_on(cut))}) was cut off from the job's rank 0.")
        if self.silent_ranks:
            lost = sorted(self.silent_ranks)
            finders = sorted(set().union(*self.silent_ranks.values()))
            quiet = [r for r in lost if r not in self.records]
            tail = "; it wrote no record" if quiet == lost and len(lost) == 1 else ""
            return (f"Culprit: {_on_hosts(lost, self.hosts)}, which stopped answering "
                    f"({_ranks(finders)} found {'them' if len(lost) > 1 else 'it'} silent){tail}.")
        failed = [r for r, rec in self.records.items() if rec.get("reason", "").startswith("this rank failed")]
        if failed:
            return f"Culprit: {_on_hosts(failed, self.hosts)}, which failed (above)."
        absent = set()
        for record in self.records.values():
            for waiting in record.get("waiting", []):
                absent.update(waiting["missing"])
        if absent:
            return (f"Culprit: {_on_hosts(absent, self.hosts)}, which never submitted what the "
                    "others waited in.")
        return "No culprit found: every rank answered and none was missing from a collective."

    def _ranks_on(self, hosts):
        return [r for r in range(self.size) if self.hosts[r] in hosts]

    def _partition(self):
        """(hosts cut off, the other hosts) when the ranks on rank 0's side lost the ranks of
        some other hosts, and ranks on those hosts lost, in turn, only ranks of other hosts: a
        link between the two groups went down, not a process."""
        lost_by = {r: {p["rank"] for p in rec.get("silent", [])} for r, rec in self.records.items()}
        home = self.hosts[0]
        cut = {self.hosts[p] for r, lost in lost_by.items() if self.hosts[r] == home for p in lost}
        if not cut or home in cut:
            return None
        far_finders = [r for r, lost in lost_by.items() if lost and self.hosts[r] in cut]
        if not far_finders:
            return None  # nothing on the far side found the near side silent: a lost process
        for r, lost in lost_by.items():
            near = self.hosts[r] not in cut
            if any((self.hosts[p] not in cut) == near for p in lost):
                return None  # a rank lost one of its own side: not a clean cut
        return sorted(cut), sorted(set(self.hosts) - cut)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1 or argv[0] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if argv and argv[0] in ("-h", "--help") else 2
    directory = argv[0]
    records = Records(directory)
    if records.header():
        print("\n".join(records.header()))
    if not records.by_rank:
        print(f"no flight records (rank<N>.json) in {directory}", file=sys.stderr)
        return 1
    print("\n".join(Diagnosis(records.by_rank).lines()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
