"""hvd.elastic.run: runs the training function again after every reset, from the last commit.

Under mpirep-run's elastic driver a reset is a new generation of processes (docs/elastic.md):
when a rank is lost, or hosts are added or removed, every rank of this generation leaves and
the driver starts the next on the hosts there are.  Each generation's ``run`` starts by
bringing back the newest commit any rank can read, calls the reset callbacks (after the first
generation), syncs, and commits once, so a failure before the user's first commit resumes
from there.  In a job not launched elastically everything happens in this process, as in
Horovod.
"""
import functools
import sys

import numpy as np

import mpirep
from mpirep.elastic import lifeline, protocol
from mpirep.elastic.errors import HostsChangedInterrupt, RanksLostError
from mpirep.elastic.settings import settings
from mpirep.elastic.transfer import broadcast_snapshot


class EpochRealigned(Exception):
    """Raised by a Keras callback to run the training function again at an epoch boundary,
    with no reset: see UpdateBatchStateCallback."""


def run(func):
    """Decorates ``func(state, ...)``, the training function, for elastic training."""

    @functools.wraps(func)
    def wrapper(state, *args, **kwargs):
        _start_generation(state)
        while True:
            try:
                return func(state, *args, **kwargs)
            except EpochRealigned:
                continue
            except (HostsChangedInterrupt, RanksLostError) as reset:
                if settings().launched:
                    _leave_for_next_generation(reset)
                if isinstance(reset, RanksLostError):
                    state.restore()
                state.on_reset()
                state.sync()

    return wrapper


def _start_generation(state):
    log = state.commit_log
    if log.launched:
        _resume_from_newest_commit(state)
        if settings().generation > 0:
            state.on_reset()
    state.sync()
    state.save()


def _resume_from_newest_commit(state):
    """Every rank says which commit it can read; the newest wins.  Rank 0 loads it when it
    can read it itself (the sync that follows gives it to the others); otherwise the lowest
    rank that can sends it to every rank and all load it."""
    log = state.commit_log
    mine = log.newest()
    commits = mpirep.allgather(np.array([mine.commit if mine else -1], np.int64),
                               name="elastic.resume.commits")
    best = int(commits.max())
    if best < 0:
        return
    if commits[0] == best:
        if mpirep.rank() == 0:
            state.load_from(mine)
    else:
        root = int(np.argmax(commits == best))
        state.load_from(broadcast_snapshot(mine if mpirep.rank() == root else None, root))
    log.last = best


def _leave_for_next_generation(reset):
    """Tells the driver, shuts mpirep down with every other rank and ends the process; the
    next generation resumes from the last commit."""
    # Every rank raised HostsChangedInterrupt at the same commit, so all can shut down together;
    # a lost rank is another matter: the driver stops the others.
    together = isinstance(reset, HostsChangedInterrupt)
    lifeline.current().goodbye(protocol.RESTART, reason=type(reset).__name__, together=together)
    if together:
        mpirep.shutdown()
    sys.stdout.flush()
    sys.exit(0)
