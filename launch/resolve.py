"""From parsed flags and the environment to a Job and the plan that runs it."""
import os
import shlex

from . import keras2, mpi_probe, mpirun_argv, srun_argv
from .environment import forwardable_names, parse_exports
from .errors import LaunchError
from .hosts import is_local, local_core_count, parse_host_list, parse_hostfile, total_slots
from .job import Job
from mpirep._settings_table import SETTINGS

from .tuning import tuning_environment

DEFAULT_START_TIMEOUT = 30.0


def choose_launcher(requested, hosts, environ):
    if requested == "srun" and hosts:
        raise LaunchError("-H/--hostfile are for mpirun; under srun choose nodes with Slurm "
                          "(e.g. --mpi-args='--nodelist=...')")
    if requested != "auto":
        return requested
    return "srun" if srun_argv.in_allocation(environ) and not hosts else "mpirun"


def read_hosts(args):
    if args.hosts:
        return parse_host_list(args.hosts)
    if args.hostfile:
        return parse_hostfile(args.hostfile)
    return None


def start_timeout(args, environ):
    if args.start_timeout is not None:
        return args.start_timeout
    for name in ("MPIREP_START_TIMEOUT", "HOROVOD_START_TIMEOUT"):
        if environ.get(name):
            return float(environ[name])
    return DEFAULT_START_TIMEOUT


def ssh_args(args):
    ssh = []
    if args.ssh_port:
        ssh += ["-p", str(args.ssh_port)]
    if args.ssh_identity_file:
        ssh += ["-i", args.ssh_identity_file]
    if args.ssh_config_file:
        ssh += ["-F", args.ssh_config_file]
    if any(" " in arg for arg in ssh):
        raise LaunchError("ssh options cannot contain spaces (mpirun splits them on blanks)")
    return ssh


def _num_proc(args, launcher, hosts, environ):
    if args.num_proc is not None:
        return args.num_proc
    if hosts:
        return total_slots(hosts)
    if srun_argv.in_allocation(environ):
        return srun_argv.allocation_tasks(environ)
    if launcher == "srun":
        return None
    raise LaunchError("-np is required (or give -H/--hostfile, or run inside a Slurm allocation)")


def _local_slots(launcher, environ):
    if srun_argv.in_allocation(environ):
        return srun_argv.allocation_tasks(environ)
    return local_core_count() if launcher == "mpirun" else None


def build_job(args, launcher, hosts, environ):
    if not args.command:
        raise LaunchError("no command given; e.g. mpirep-run -np 2 python train.py")
    rank_env = {**tuning_environment(args), **keras2.environment(args),
                **parse_exports(args.exports, environ)}
    remote = launcher == "mpirun" and hosts and not all(is_local(host) for host in hosts)
    # Open MPI starts remote ranks with ssh's bare environment: send ours along by name.
    forward = [name for name in forwardable_names(environ) if name not in rank_env] if remote else []
    interfaces = [part for item in args.network_interfaces for part in item.split(",") if part]
    return Job(
        command=list(args.command),
        num_proc=_num_proc(args, launcher, hosts, environ),
        hosts=hosts,
        slots=None if hosts else _local_slots(launcher, environ),
        rank_env=rank_env,
        forward_names=forward,
        mpi_args=shlex.split(args.mpi_args),
        binding_args=shlex.split(args.binding_args) if args.binding_args is not None else None,
        network_interfaces=interfaces,
        tcp_only=args.tcp_only,
        ssh_args=ssh_args(args),
        output_dir=args.output_filename,
        running_as_root=hasattr(os, "geteuid") and os.geteuid() == 0,
        srun_mpi=args.srun_mpi or _srun_mpi_of_the_core(),
        # MPICH refuses to start with both Hydra's PMI and srun's PMIx ("Found both env vars
        # PMI_SIZE and PMIX_NAMESPACE"); the user's own choice stands
        hydra_srun_mpi=("none" if srun_argv.in_allocation(environ)
                        and "SLURM_MPI_TYPE" not in environ else None),
        spans_hosts=bool(remote),
        peer_timeout_seconds=peer_timeout(rank_env, environ),
    )


def _srun_mpi_of_the_core():
    """srun's --mpi plugin for the MPI the installed core was built against, as the build
    recorded it (mpirep/_mpi_library.py), without loading the core; pmix where there is no
    record (a source tree not built yet)."""
    try:
        from mpirep._mpi_library import BUILT_WITH
    except ImportError:
        return "pmix"
    return srun_argv.mpi_plugin_for(BUILT_WITH["library_version"])


def peer_timeout(rank_env, environ):
    """The ranks' peer_timeout_seconds: as set for them here, else as inherited, else the
    setting's default."""
    setting = next(s for s in SETTINGS if s.name == "peer_timeout_seconds")
    variable = "MPIREP_" + setting.environment
    value = rank_env.get(variable, environ.get(variable))
    try:
        return float(value) if value not in (None, "") else setting.default
    except ValueError:
        return setting.default


def plan_for(job, launcher, environ):
    """The plan, and the MPI found (None under srun, which needs no mpirun)."""
    if launcher == "srun":
        return srun_argv.build(job), None
    info = mpi_probe.probe(environ)
    return mpirun_argv.build(job, info), info
