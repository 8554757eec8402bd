"""From the parsed command line to a running elastic driver (or, with --dry-run, the plan of
its first generation)."""
from .. import mpi_probe, resolve, srun_argv
from ..errors import LaunchError
from . import plans
from .config import from_args
from .discovery import FixedDiscovery, ScriptDiscovery, SlurmDiscovery
from .driver import ElasticDriver
from .host_pool import HostPool


def _discovery(args, hosts, environ):
    if args.host_discovery_script:
        return ScriptDiscovery(args.host_discovery_script, args.slots_per_host)
    if hosts:
        return FixedDiscovery(hosts)
    if srun_argv.in_allocation(environ):
        return SlurmDiscovery(environ, args.slots_per_host)
    raise LaunchError("elastic mode needs hosts: --host-discovery-script, -H/--hostfile, or "
                      "a Slurm allocation")


def start(args, environ, say):
    if not args.command:
        raise LaunchError("no command given; e.g. mpirep-run --min-np 2 python train.py")
    config = from_args(args, environ)
    hosts = resolve.read_hosts(args)
    discovery = _discovery(args, hosts, environ)
    launcher = resolve.choose_launcher(args.launcher, hosts, environ)
    mpi_info = mpi_probe.probe(environ) if launcher == "mpirun" else None
    if args.dry_run:
        pool = HostPool()
        pool.update(discovery.discover())
        env = plans.rank_environment(config, "RUN", "DRIVER:PORT", "TOKEN", 0)
        print(plans.build(args, launcher, mpi_info, pool.plan(config.max_np), environ, env,
                          "RUNDIR", 0).render(), flush=True)
        return 0
    return ElasticDriver(args, config, launcher, mpi_info, discovery, environ, say).run()
