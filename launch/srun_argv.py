"""srun command lines, for launching inside a Slurm allocation."""
from .errors import LaunchError
from .job import Plan

MPIRUN_ONLY = {"binding_args": "--binding-args", "network_interfaces": "--network-interface",
               "tcp_only": "--tcp", "ssh_args": "--ssh-port/--ssh-identity-file/--ssh-config-file"}


def in_allocation(environ):
    return bool(environ.get("SLURM_JOB_ID"))


def allocation_tasks(environ):
    """Tasks the allocation was made for: SLURM_NTASKS, else one per node (Slurm's default)."""
    for name in ("SLURM_NTASKS", "SLURM_NNODES"):
        value = environ.get(name, "")
        if value.isdigit():
            return int(value)
    return None


def mpi_plugin_for(library_version):
    """srun's --mpi plugin for a core built against the MPI that ``library_version`` (its
    MPI_Get_library_version) names: MPICH and Intel MPI start with PMI-2 and refuse PMIx
    ("unsupported PMI version PMIx"); Open MPI wants PMIx (Debian's has no PMI-2)."""
    if any(name in library_version for name in ("MPICH", "Intel(R) MPI")):
        return "pmi2"
    return "pmix"


def build(job):
    given = [flag for attr, flag in MPIRUN_ONLY.items() if getattr(job, attr)]
    if given:
        raise LaunchError(f"{', '.join(given)} only apply to mpirun; under srun configure "
                                "the MPI through its environment, or use --launcher mpirun")
    argv = ["srun", f"--mpi={job.srun_mpi}"]
    if job.num_proc is not None:
        argv += ["--ntasks", str(job.num_proc)]
    # One failed rank ends the step, instead of the others waiting in a collective.
    argv.append("--kill-on-bad-exit=1")
    if job.output_dir:
        argv += ["--output", f"{job.output_dir}/rank.%t.stdout",
                 "--error", f"{job.output_dir}/rank.%t.stderr"]
    # srun hands its whole environment to the tasks, so rank_env travels without flags.
    return Plan(argv + job.mpi_args + job.command, dict(job.rank_env))
