"""The launch plan of one generation: the job of the command line, on this generation's
hosts, with the variables that connect its ranks to the driver."""
import argparse
import dataclasses
import os

from mpirep.elastic import protocol

from .. import mpirun_argv, resolve, srun_argv
from ..hosts import total_slots
from ..job import Plan


def rank_environment(config, run_id, driver_address, token, generation):
    env = {protocol.DRIVER: driver_address, protocol.TOKEN: token, protocol.RUN_ID: run_id,
           protocol.GENERATION: str(generation), protocol.STORE_DIR: config.store_dir}
    if config.shared_dir:
        env[protocol.SHARED_DIR] = os.path.abspath(config.shared_dir)
    return env


def srun_hostfile(run_dir, generation):
    return os.path.join(run_dir, f"hosts.{generation}")


def write_srun_hostfile(path, hosts):
    """srun's arbitrary distribution puts task i on line i of SLURM_HOSTFILE, which also
    allows a different number of slots on each host."""
    with open(path, "w") as f:
        f.writelines(f"{host.name}\n" for host in hosts for _ in range(host.slots))


def build(args, launcher, mpi_info, hosts, environ, rank_env, run_dir, generation):
    """The plan (job.Plan) of one generation; ``mpi_info`` is mpi_probe's (None under srun)."""
    args = argparse.Namespace(**{**vars(args), "num_proc": total_slots(hosts)})
    job = resolve.build_job(args, launcher, hosts if launcher == "mpirun" else None, environ)
    job = dataclasses.replace(job, rank_env={**job.rank_env, **rank_env})
    if launcher == "mpirun":
        return mpirun_argv.build(job, mpi_info)
    plan = srun_argv.build(job)
    return Plan(plan.argv[:1] + ["--distribution=arbitrary"] + plan.argv[1:],
                {**plan.env, "SLURM_HOSTFILE": srun_hostfile(run_dir, generation)})
