"""Slurm on one node: srun directly, and mpirep-run inside an allocation (srun by default,
mpirun on request)."""
import os

import pytest

from cluster_jobs import RANK_CMD, check_ranks, launcher_cmd, run

pytestmark = pytest.mark.slurm1


def slurm_env():
    return {"SLURM_CONF": os.environ["MPIREP_SLURM_CONF"]}


def test_srun_pmix_two_ranks():
    check_ranks(run(["srun", "--mpi=pmix", "-n", "2"] + RANK_CMD, slurm_env()).stdout, 2)


def test_mpirep_run_in_allocation_uses_srun_and_its_task_count():
    out = run(["salloc", "-n", "3"] + launcher_cmd() + ["--verbose"] + RANK_CMD, slurm_env())
    assert "launching with srun" in out.stderr
    lines = check_ranks(out.stdout, 3)
    # under srun SLURM_PROCID is each task's own rank
    assert all(fields[9] == str(rank) for rank, fields in lines.items())


def test_mpirep_run_in_allocation_with_mpirun_on_request():
    out = run(["salloc", "-n", "2"] + launcher_cmd() + ["--launcher", "mpirun", "--verbose"]
              + RANK_CMD, slurm_env())
    assert "MPI: Open MPI" in out.stderr
    check_ranks(out.stdout, 2)


def test_failing_rank_under_srun_sets_the_exit_status():
    done = run(["salloc", "-n", "2"] + launcher_cmd() + RANK_CMD + ["--exit-code", "4"],
               slurm_env(), check=False)
    assert done.returncode == 4, done.stderr
