"""Slurm on one node with an MPICH-family MPI: the core built against the mpich wheel, in a
venv of its own, runs under `srun --mpi=pmi2` (MPICH's PMI client refuses srun's PMIx);
mpirep-run inside an allocation chooses pmi2 for such a core by itself, and with
`--launcher mpirun` keeps srun's PMIx away from Hydra's ranks."""
import os
import sys

import pytest

from cluster_jobs import REPO

sys.path.append(str(REPO / "tests"))  # run.sh's pytest has only tests/cluster on its path
from installs import RUNTIME, copy_checkout, core_check, make_venv, pip  # noqa: E402

pytestmark = pytest.mark.slurm1


def slurm_env():
    return {"SLURM_CONF": os.environ["MPIREP_SLURM_CONF"]}


@pytest.fixture(scope="module")
def mpich_python(tmp_path_factory):
    """A venv with the mpich wheel and mpirep built against it."""
    checkout = copy_checkout(tmp_path_factory.mktemp("checkout"))
    python = make_venv(tmp_path_factory.mktemp("mpich") / "venv")
    pip(python, "mpich", *RUNTIME)
    pip(python, "--no-deps", "--no-build-isolation", checkout, env={"MPIREP_MPI_WHEEL": "mpich"})
    return python


def test_the_core_check_under_srun_pmi2(mpich_python):
    mpis = core_check(["srun", "--mpi=pmi2", "-n", "3", "--kill-on-bad-exit=1", mpich_python], 3,
                      env=slurm_env())
    assert all(mpi.startswith("MPICH Version") for mpi in mpis), mpis


def test_mpirep_run_chooses_pmi2_for_a_core_of_mpich(mpich_python):
    mpirep_run = mpich_python.parent / "mpirep-run"
    mpis = core_check(["salloc", "-n", "2", mpirep_run, mpich_python], 2, env=slurm_env())
    assert all(mpi.startswith("MPICH Version") for mpi in mpis), mpis


def test_mpirep_run_with_hydra_in_an_allocation(mpich_python):
    mpirep_run = mpich_python.parent / "mpirep-run"
    mpis = core_check(["salloc", "-n", "2", mpirep_run, "--launcher", "mpirun", mpich_python], 2,
                      env=slurm_env())
    assert all(mpi.startswith("MPICH Version") for mpi in mpis), mpis
