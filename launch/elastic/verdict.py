"""How a generation ended, from what each rank said on its lifeline and the launcher's exit
status: finished, failed for good, or to be restarted without the hosts it lost.

A rank that raised is a bug: the job ends, never restarts.  A rank whose lifeline went quiet
(closed with no goodbye, or killed by a signal) before the driver stopped the generation is a
lost host; so is one whose lifeline is still open after its launcher exited (its host no
longer answers).  Ranks that asked for a restart (hosts changed) restart the job with every
host kept.
"""
from __future__ import annotations

import dataclasses

from mpirep.elastic import protocol

SUCCESS, FAILED, RESTART = "success", "failed", "restart"


@dataclasses.dataclass
class RankRecord:
    host: str                    # the host the rank was placed on
    connected: bool = False      # said hello
    goodbye: str | None = None   # protocol kind of its goodbye
    detail: str = ""             # the error it raised, or why it restarts
    said_at: int = 0             # order of its goodbye among the generation's goodbyes
    quiet: bool = False          # ended with no goodbye, or by a signal, before any stop
    open_at_end: bool = False    # lifeline still open after the launcher exited
    together: bool = False       # its restart is one all ranks ask for and leave by themselves


@dataclasses.dataclass(frozen=True)
class Outcome:
    kind: str
    status: int = 0
    message: str = ""
    lost_hosts: tuple = ()


def _hosts(records):
    return tuple(dict.fromkeys(record.host for record in records))


def judge(records, launcher_status):
    failure_status = launcher_status or 1
    errors = sorted(((r.said_at, rank, r) for rank, r in enumerate(records)
                     if r.goodbye == protocol.ERROR), key=lambda error: error[:2])
    if errors:   # the first to raise; the others usually only heard of it
        _, rank, record = errors[0]
        return Outcome(FAILED, failure_status,
                       f"rank {rank} on {record.host} raised {record.detail}; an error in the "
                       "program is not retried")
    connected = [r for r in records if r.connected]
    if not connected:
        return Outcome(FAILED, failure_status,
                       f"the job ended (exit status {launcher_status}) before any rank "
                       "called mpirep.init(); nothing to retry")
    silent = [r for r in records if r.open_at_end]
    lost = silent or [r for r in records if r.quiet or not r.connected]
    if lost:
        return Outcome(RESTART, lost_hosts=_hosts(lost))
    if any(r.goodbye == protocol.RESTART for r in records):
        return Outcome(RESTART)
    if launcher_status == 0 and all(r.goodbye == protocol.EXIT for r in records):
        return Outcome(SUCCESS)
    return Outcome(FAILED, failure_status,
                   f"the job ended with exit status {launcher_status}")
