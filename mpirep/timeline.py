"""Recording a timeline at run time (docs/timeline.md), with Horovod's names. The ``timeline``
setting records one from ``init`` on; these start and stop one while the job runs."""

import os

from mpirep._core_loader import core
from mpirep.session import _require_init


def start_timeline(file_path, mark_cycles=False):
    """Rank 0 starts writing a timeline of every tensor's phases to ``file_path`` (a Chrome
    trace), closing the one it was writing, if any; ``mark_cycles`` also marks each round of the
    background thread. Not collective: every rank may call it, and only rank 0 writes. Safe while
    collectives run."""
    _require_init()
    core().start_timeline(os.fspath(file_path), bool(mark_cycles))


def stop_timeline():
    """Rank 0 finishes and closes its timeline file, if it is writing one."""
    _require_init()
    core().stop_timeline()
