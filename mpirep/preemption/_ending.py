"""Ending every rank of a job alike once they have agreed to stop for a preemption signal."""

import sys

import numpy as np

from mpirep.preemption import _slurm

#: Every rank's exit status after a preemption signal where the job was not requeued: 75, the
#: EX_TEMPFAIL of sysexits.h ("a temporary failure; try again").
EXIT_STATUS = 75
_REQUEUED, _STOPPED = 1, 2


def _broadcast_from_rank0(code):
    import mpirep

    return int(mpirep.broadcast(np.array([code], np.int32), 0,
                                name="mpirep.preemption.outcome")[0])


def stop_job(rank, saved, resume_hint, requeueable_job=_slurm.requeueable_job,
             requeue=_slurm.requeue, broadcast_from_rank0=_broadcast_from_rank0,
             out=sys.stderr):
    """After the backup of the agreed step boundary is written (``saved``, a description of
    it), rank 0 requeues the Slurm job if it can, and every rank raises SystemExit: 0 if it was
    requeued, EXIT_STATUS otherwise, with rank 0 printing how to resume (``resume_hint``).
    Collective: rank 0's outcome reaches every rank, which also keeps the others running until
    rank 0 has finished its save, so that no launcher ends rank 0 mid-save on their exit."""
    outcome = _STOPPED
    if rank == 0:
        job_id = requeueable_job()
        problem = requeue(job_id) if job_id else None
        if job_id and problem is None:
            outcome = _REQUEUED
            print(f"mpirep: preemption signal: saved {saved}; requeued Slurm job {job_id}, "
                  "which resumes from there when it starts again", file=out, flush=True)
        else:
            why = f" (scontrol requeue {job_id} failed: {problem})" if job_id else ""
            print(f"mpirep: preemption signal: saved {saved}; not requeued{why}. Every rank "
                  f"exits with status {EXIT_STATUS}. To resume, {resume_hint}", file=out,
                  flush=True)
    outcome = broadcast_from_rank0(outcome)
    raise SystemExit(0 if outcome == _REQUEUED else EXIT_STATUS)
