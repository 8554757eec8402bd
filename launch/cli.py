"""mpirep-run: parse, build the launch plan, print or run it."""
import os
import shutil
import sys
from importlib import metadata

from . import check_build, elastic, mpi_probe, options, preflight, resolve, runner, srun_argv
from .errors import LaunchError


def _version():
    try:
        return metadata.version("mpirep")
    except metadata.PackageNotFoundError:
        return "unknown (mpirep is not installed)"


def _say(text):
    print(f"mpirep-run: {text}", file=sys.stderr, flush=True)


def _check_ssh(job, launcher, environ, args):
    if launcher != "mpirun" or not job.hosts or srun_argv.in_allocation(environ):
        return
    timeout = resolve.start_timeout(args, environ)
    failed = preflight.unreachable_hosts(job.hosts, job.ssh_args, timeout)
    if failed:
        details = "\n".join(f"  {name}: {why}" for name, why in failed.items())
        raise LaunchError(f"cannot reach these hosts over ssh:\n{details}\n"
                          "Check the host names, ssh keys (-i, --ssh-config-file) and "
                          "--start-timeout.")


def launch(args, environ):
    if elastic.requested(args):
        return elastic.launch(args, environ, _say)
    hosts = resolve.read_hosts(args)
    launcher = resolve.choose_launcher(args.launcher, hosts, environ)
    job = resolve.build_job(args, launcher, hosts, environ)
    plan, info = resolve.plan_for(job, launcher, environ)
    if args.dry_run:   # prints the plan even where it could not run
        print(plan.render(), flush=True)
        return 0
    if launcher == "srun" and not shutil.which("srun", path=environ.get("PATH")):
        raise LaunchError("srun not found on PATH; outside Slurm use --launcher mpirun")
    if args.verbose:
        _say(f"MPI: {info.flavour} {info.version}" if info else "launching with srun")
        _say(plan.render())
    _check_ssh(job, launcher, environ, args)
    if job.output_dir:
        os.makedirs(job.output_dir, exist_ok=True)
    return runner.run(plan, environ)


def main(argv=None, environ=None):
    environ = mpi_probe.with_launcher_on_path(dict(os.environ if environ is None else environ))
    _, args = options.parse(sys.argv[1:] if argv is None else argv)
    if args.version:
        print(f"mpirep {_version()}")
        return 0
    for flag in args.ignored:
        _say(f"warning: ignoring horovodrun's {flag}: mpirep has no such setting")
    if args.build_tf_ops and not args.check_build:
        _say("error: --build-tf-ops goes with --check-build")
        return 1
    if args.diagnose:
        from mpirep import diagnose

        return diagnose.main([args.diagnose])
    if args.check_build:
        lines, ready = check_build.report(environ, build_tf_ops=args.build_tf_ops, progress=_say)
        print("\n".join(lines))
        return 0 if ready else 1
    try:
        return launch(args, environ)
    except LaunchError as err:
        _say(f"error: {err}")
        return 1
