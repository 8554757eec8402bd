"""Requeueing the Slurm job this process belongs to, where that job can be requeued."""

import os
import re
import subprocess


def requeueable_job(environ=os.environ, run=subprocess.run):
    """The id of this process's Slurm job when it is a batch job that may be requeued
    (``sbatch --requeue``, or a cluster whose JobRequeue defaults to 1), else None."""
    job_id = environ.get("SLURM_JOB_ID")
    if not job_id:
        return None
    try:
        shown = run(["scontrol", "show", "job", "--oneliner", job_id], capture_output=True,
                    text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if shown.returncode != 0:
        return None
    fields = dict(re.findall(r"(\w+)=(\S*)", shown.stdout))
    return job_id if fields.get("BatchFlag") == "1" and fields.get("Requeue") == "1" else None


def requeue(job_id, run=subprocess.run):
    """Requeues the job: Slurm ends its steps and starts it again later, with the same id.
    Returns None when done, else what scontrol said."""
    try:
        done = run(["scontrol", "requeue", job_id], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as error:
        return str(error)
    return None if done.returncode == 0 else (done.stderr or done.stdout).strip()
