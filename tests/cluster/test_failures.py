"""A rank that raises, exits or is SIGKILLed while the others wait for it in a collective
ends the whole job, non-zero, soon after its failure, under mpirun, mpirep-run and srun.
Survivors name the failed rank and quote its exception; where it could say nothing (SIGKILL)
the launcher ends the job and names it."""
import os
import re
import time

import pytest

from cluster_jobs import HERE, ON_NET, PY, launcher_cmd, finish, start

# How soon the job must end after the failure: far above what ending takes on a loaded machine,
# far below the 120 s limit, which a job whose survivors waited would run into.
BOUND_S = 30
JOB = [PY, str(HERE / "one_rank_fails.py")]
MODES = ["raise", "exit", "exit0", "kill", "kill_in_data"]


def slurm1_env():
    return {"SLURM_CONF": os.environ["MPIREP_SLURM_CONF"]}


def slurm2_env():
    return {"SLURM_CONF": os.environ["MPIREP_SLURM2_CONF"], **ON_NET}


# name -> (command for n ranks, its environment, the cluster it needs)
LAUNCHERS = {
    "mpirun": (lambda n: ["mpirun", "--oversubscribe", "--bind-to", "none", "-np", str(n)],
               dict, []),
    "mpirep-run": (lambda n: launcher_cmd() + ["-np", str(n)], dict, []),
    "srun": (lambda n: ["srun", "--mpi=pmix", "-n", str(n)], slurm1_env, [pytest.mark.slurm1]),
    "mpirep-run-in-salloc": (lambda n: ["salloc", "-n", str(n)] + launcher_cmd(), slurm1_env,
                             [pytest.mark.slurm1]),
    "mpirep-run-on-2-nodes": (lambda n: ["salloc", "-N", "2", f"--ntasks-per-node={n // 2}"]
                              + launcher_cmd(), slurm2_env, [pytest.mark.slurm2]),
}


def case(launcher, mode, np_, failing_rank):
    return pytest.param(launcher, mode, np_, failing_rank, marks=LAUNCHERS[launcher][2],
                        id=f"{launcher}-{mode}-np{np_}-rank{failing_rank}")


CASES = ([case(launcher, mode, 3, 1) for launcher in ("mpirun", "mpirep-run", "srun",
                                                      "mpirep-run-in-salloc") for mode in MODES]
         # rank 0 negotiates for everyone; rank 3 of 4 runs on the second emulated host
         + [case(launcher, mode, 3, 0) for launcher in ("mpirun", "srun")
            for mode in ("raise", "kill_in_data")]
         + [case("mpirep-run-on-2-nodes", mode, 4, 3) for mode in ("raise", "exit", "kill_in_data")])


def survivor_message(mode, rank):
    if mode == "raise":
        return f"rank {rank} failed: RuntimeError: rank {rank} raised in the middle of training"
    return f"rank {rank} shut down (it called shutdown() or its process exited)"


def launcher_names_killed(rank):
    """Open MPI's and Slurm's words for a rank that died by SIGKILL."""
    return re.compile(rf"process rank {rank} with PID \d+ on node \S+ exited on signal 9"
                      rf"|task {rank}: Killed")


@pytest.mark.parametrize("launcher, mode, np_, failing_rank", CASES)
def test_job_ends_soon_and_names_the_failed_rank(launcher, mode, np_, failing_rank, tmp_path):
    command, env, _ = LAUNCHERS[launcher]
    proc = start(command(np_) + JOB + [mode, str(failing_rank), str(tmp_path)], env())
    done = finish(proc, 120)
    ended = time.time()
    output = done.stdout + done.stderr
    failing = tmp_path / "failing.txt"
    assert failing.exists(), f"rank {failing_rank} never reached its failure:\n{output}"
    took = ended - float(failing.read_text())
    print(f"ended {took:.1f} s after the failure")
    assert took < BOUND_S, f"the job ended {took:.1f} s after rank {failing_rank} failed:\n{output}"
    assert done.returncode != 0, output
    if mode.startswith("kill"):
        assert launcher_names_killed(failing_rank).search(output), output
    else:
        survivors = [r for r in range(np_) if r != failing_rank]
        records = {r: tmp_path / f"rank{r}.txt" for r in survivors}
        named = [r for r, path in records.items()
                 if path.exists() and survivor_message(mode, failing_rank) in path.read_text()]
        assert named == survivors, f"ranks {named} of {survivors} named rank {failing_rank}:\n{output}"
