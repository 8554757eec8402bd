"""The sbatch templates in launch/slurm/ on the real 2-node Slurm cluster (h1, h2), and
mpirep-run inside a 2-node allocation."""
import os

import pytest

from cluster_jobs import ON_NET, RANK_CMD, REPO, check_ranks, launcher_cmd, run, wait_job

pytestmark = pytest.mark.slurm2


def slurm_env():
    return {"SLURM_CONF": os.environ["MPIREP_SLURM2_CONF"], **ON_NET}


@pytest.mark.parametrize("template", ["two-node-srun.sbatch", "two-node-mpirun.sbatch"])
def test_sbatch_template(tmp_path, template):
    out = tmp_path / "job.out"
    submitted = run(["sbatch", "--parsable", "-o", str(out), "-D", str(tmp_path),
                     str(REPO / "launch" / "slurm" / template)] + RANK_CMD, slurm_env())
    state, info = wait_job(submitted.stdout.strip().split(";")[0], slurm_env())
    text = out.read_text() if out.exists() else ""
    assert state == "COMPLETED", f"{info}\n{text}"
    lines = check_ranks(text, 4, hosts={"h1", "h2"})
    if "mpirun" in template:
        # the trap the template warns about: each rank inherits the batch step's SLURM_PROCID
        assert {fields[9] for fields in lines.values()} == {"0"}
    else:
        assert all(fields[9] == str(rank) for rank, fields in lines.items())


def test_mpirep_run_in_two_node_allocation():
    out = run(["salloc", "-N", "2", "--ntasks-per-node=2"] + launcher_cmd() + RANK_CMD,
              slurm_env()).stdout
    check_ranks(out, 4, hosts={"h1", "h2"})
