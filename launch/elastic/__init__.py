"""mpirep-run in elastic mode: the driver that runs a job as generations of ranks on the hosts
that are there (docs/elastic.md).  It builds on the same job and plan code as a plain launch."""
from .. import mpi_probe, resolve, srun_argv
from ..errors import LaunchError
from . import plans
from .config import from_args, requested
from .discovery import FixedDiscovery, ScriptDiscovery, SlurmDiscovery
from .driver import ElasticDriver
from .host_pool import HostPool

__all__ = ["launch", "requested"]


def _discovery(args, hosts, environ):
    if args.host_discovery_script:
        return ScriptDiscovery(args.host_discovery_script, args.slots_per_host)
    if hosts:
        return FixedDiscovery(hosts)
    if srun_argv.in_allocation(environ):
        return SlurmDiscovery(environ, args.slots_per_host)
    raise LaunchError("elastic mode needs hosts: --host-discovery-script, -H/--hostfile, or "
                      "a Slurm allocation")


def launch(args, environ, say):
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
