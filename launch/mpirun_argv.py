"""mpirun command lines for Open MPI and for the Hydra-based MPIs (MPICH, Intel MPI)."""
import math

from . import mpi_probe
from .errors import LaunchError
from .job import Plan
from .hosts import format_host_list, total_slots

# No binding: each rank runs TensorFlow's own thread pools, which Open MPI's default
# (bind to a core when np <= 2) would squeeze onto a single core; hosts that share a machine
# (containers, namespaces) would also all pin their first rank to core 0.
OPEN_MPI_DEFAULT_BINDING = ["--bind-to", "none", "--map-by", "slot"]


def build(job, info):
    if info.flavour == mpi_probe.OPEN_MPI:
        return _open_mpi(job, info)
    return _hydra(job, info)


def _slots(job):
    return total_slots(job.hosts) if job.hosts else job.slots


def _open_mpi(job, info):
    argv = [info.mpirun]
    if job.running_as_root:
        argv.append("--allow-run-as-root")
    if job.num_proc is not None:
        argv += ["-np", str(job.num_proc)]
    if job.hosts:
        argv += ["-H", format_host_list(job.hosts)]
    slots = _slots(job)
    if job.num_proc is not None and slots is not None and job.num_proc > slots:
        argv.append("--oversubscribe")
    argv += OPEN_MPI_DEFAULT_BINDING if job.binding_args is None else job.binding_args
    if job.tcp_only:
        argv += ["--mca", "btl", "tcp,self"]
    if job.network_interfaces:
        interfaces = ",".join(job.network_interfaces)
        argv += ["--mca", "btl_tcp_if_include", interfaces, "--mca", "oob_tcp_if_include", interfaces]
    if job.ssh_args:
        argv += ["--mca", "plm_rsh_args", " ".join(job.ssh_args)]
    if job.spans_hosts and job.peer_timeout_seconds > 0:
        argv += _daemon_keepalive(job.peer_timeout_seconds)
    if job.output_dir:
        argv += ["--output-filename", job.output_dir]
    for name in sorted(set(job.rank_env) | set(job.forward_names)):
        argv += ["-x", name]
    return Plan(argv + job.mpi_args + job.command, dict(job.rank_env))


def _daemon_keepalive(peer_timeout_seconds):
    """Open MPI's daemons notice a host that stopped answering by TCP keepalive, by default
    after 8 minutes. Probed every second and given up on a few seconds after the ranks' own
    peer timeout, mpirun ends the job soon after the ranks have said what they lost
    (docs/reliability.md), rather than waiting on an unreachable daemon."""
    interval = math.ceil((peer_timeout_seconds + 5) / 3)
    return ["--mca", "oob_tcp_keepalive_time", "1", "--mca", "oob_tcp_keepalive_intvl", str(interval),
            "--mca", "oob_tcp_keepalive_probes", "3"]


def _hydra(job, info):
    if job.tcp_only:
        raise LaunchError(f"--tcp is for Open MPI; with {info.flavour} choose the network "
                                "through its own settings (e.g. FI_PROVIDER=tcp via -x)")
    argv = [info.mpirun]
    if job.num_proc is not None:
        argv += ["-np", str(job.num_proc)]
    argv += _hydra_hosts(job, info)
    if job.binding_args:
        argv += job.binding_args
    if job.network_interfaces:
        if len(job.network_interfaces) != 1 or "/" in job.network_interfaces[0]:
            raise LaunchError(f"{info.flavour} takes one interface name for "
                                    f"--network-interface, not {job.network_interfaces}")
        argv += ["-iface", job.network_interfaces[0]]
    launcher_env = {"SLURM_MPI_TYPE": job.hydra_srun_mpi} if job.hydra_srun_mpi else {}
    if job.ssh_args:
        if info.flavour == mpi_probe.INTEL_MPI:
            argv += ["-bootstrap", "ssh", "-bootstrap-exec-args", " ".join(job.ssh_args)]
        else:
            launcher_env["HYDRA_LAUNCHER_EXTRA_ARGS"] = " ".join(job.ssh_args)
    if job.output_dir:
        argv += ["-outfile-pattern", f"{job.output_dir}/rank.%r.stdout",
                 "-errfile-pattern", f"{job.output_dir}/rank.%r.stderr"]
    # Hydra passes the whole environment to every rank by itself; -genv only makes the
    # variables this launcher sets explicit (and wins over a host's own shell settings).
    for name, value in job.rank_env.items():
        argv += ["-genv", name, value]
    return Plan(argv + job.mpi_args + job.command, {**job.rank_env, **launcher_env})


def _hydra_hosts(job, info):
    if not job.hosts:
        return []
    if info.flavour == mpi_probe.MPICH:
        return ["-hosts", format_host_list(job.hosts)]
    per_host = {host.slots for host in job.hosts}
    if len(per_host) != 1:
        raise LaunchError("Intel MPI needs the same slots on every host; for uneven "
                                "slots pass a machine file: --mpi-args='-machinefile FILE'")
    return ["-hosts", ",".join(host.name for host in job.hosts), "-ppn", str(per_host.pop())]
