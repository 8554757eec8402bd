"""The command line of mpirep-run.  Horovod's horovodrun spellings are kept, so that
`horovodrun -np 4 -H a:2,b:2 python train.py` ports by renaming the command."""
import argparse

from .tuning import add_tuning_flags

# horovodrun flags for features mpirep does not have.  They are accepted with a warning so a
# ported command line still starts; they only ever tuned performance.  (name, takes a value)
IGNORED_HOROVOD_FLAGS = (
    ("--mpi", False),
    ("--hierarchical-allgather", False), ("--no-hierarchical-allgather", False),
    # mpirep's autotuning searches a grid, not by Bayesian optimisation
    ("--autotune-bayes-opt-max-samples", True), ("--autotune-gaussian-process-noise", True),
    ("--log-level", True),
)


def _positive_int(text):
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


def _non_negative_int(text):
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must not be negative, not {value}")
    return value


def _non_negative(text):
    value = float(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must not be negative, not {text}")
    return value


class _Ignored(argparse.Action):
    def __call__(self, parser, namespace, values, option_string=None):
        namespace.ignored.append(option_string)


def build_parser():
    p = argparse.ArgumentParser(
        prog="mpirep-run", allow_abbrev=False,
        description="Start an mpirep job with mpirun (Open MPI, MPICH, Intel MPI) or, inside a "
                    "Slurm allocation, with srun.",
        epilog="Example: mpirep-run -np 4 -H node1:2,node2:2 python train.py")
    p.add_argument("-v", "--version", action="store_true", help="print mpirep's version and exit")
    p.add_argument("-np", "--num-proc", dest="num_proc", type=_positive_int,
                   help="number of ranks (default: the slots of -H/--hostfile, or the Slurm "
                        "allocation's tasks)")
    p.add_argument("-cb", "--check-build", action="store_true",
                   help="show the MPI, mpi4py, native core and TensorFlow bridge this Python finds")
    p.add_argument("--build-tf-ops", action="store_true",
                   help="with --check-build: also build the TensorFlow op library into mpirep's "
                        "cache (MPIREP_CACHE_DIR) if it is not built yet")
    p.add_argument("--diagnose", metavar="DIR",
                   help="read the flight records the ranks wrote to DIR (flight_recorder_dir) and "
                        "say which ranks stopped answering or never reached a collective, then exit")
    p.add_argument("--dry-run", action="store_true", help="print the exact command and exit")
    p.add_argument("--verbose", action="store_true", help="print the command before running it")
    p.add_argument("--keras2", action="store_true",
                   help="run the ranks on tf_keras, Keras 2 (sets TF_USE_LEGACY_KERAS=1 for "
                        "them): Horovod-era scripts run unchanged but for their import")
    p.add_argument("command", nargs=argparse.REMAINDER, help="program and arguments every rank runs")

    where = p.add_argument_group("where ranks run")
    hosts = where.add_mutually_exclusive_group()
    hosts.add_argument("-H", "--hosts", help="host:slots,... e.g. node1:2,node2:2")
    hosts.add_argument("-hostfile", "--hostfile",
                       help="file of `host slots=N` lines (Open MPI and Horovod), or `host:N`")
    where.add_argument("--launcher", choices=("auto", "mpirun", "srun"), default="auto",
                       help="auto: srun inside a Slurm allocation when no hosts are given, "
                            "else mpirun")
    where.add_argument("--srun-mpi", metavar="TYPE",
                       help="srun's --mpi plugin (default: pmi2 for a core built against MPICH "
                            "or Intel MPI, else pmix)")

    mpi = p.add_argument_group("MPI")
    mpi.add_argument("--mpi-args", default="",
                     help="extra arguments for mpirun (or srun), e.g. --mpi-args='--mca btl tcp,self'")
    mpi.add_argument("--binding-args",
                     help="process binding for mpirun, replacing the default "
                          "(Open MPI: --bind-to none --map-by slot)")
    mpi.add_argument("-x", dest="exports", action="append", default=[], metavar="NAME[=VALUE]",
                     help="pass an environment variable to every rank (repeatable)")
    mpi.add_argument("--tcp", dest="tcp_only", action="store_true",
                     help="Open MPI: use only TCP between ranks")
    mpi.add_argument("--network-interface", "--network-interfaces", dest="network_interfaces",
                     action="append", default=[], metavar="IFACE[,IFACE]",
                     help="interfaces (Open MPI also takes CIDR subnets) for MPI's TCP traffic")
    mpi.add_argument("--output-filename", metavar="DIR",
                     help="write each rank's stdout and stderr to files under DIR")

    ssh = p.add_argument_group("ssh (mpirun across hosts)")
    ssh.add_argument("-p", "--ssh-port", type=_positive_int, help="ssh port on every host")
    ssh.add_argument("-i", "--ssh-identity-file", help="ssh private key")
    ssh.add_argument("--ssh-config-file", help="ssh client config file (ssh -F)")
    ssh.add_argument("--start-timeout", type=_non_negative,
                     help="seconds every remote host has to answer ssh before the job starts "
                          "(default: MPIREP_START_TIMEOUT or HOROVOD_START_TIMEOUT, else 30)")

    elastic = p.add_argument_group(
        "elastic training: hosts may fail or be added (horovodrun's flags; docs/elastic.md)")
    elastic.add_argument("--min-np", "--min-num-proc", dest="min_np", type=_positive_int,
                         help="fewest ranks training goes on with (default: -np); elastic mode")
    elastic.add_argument("--max-np", "--max-num-proc", dest="max_np", type=_positive_int,
                         help="most ranks to run (default: every slot there is); elastic mode")
    elastic.add_argument("--host-discovery-script", metavar="SCRIPT",
                         help="prints the usable hosts, one `host` or `host:slots` a line; run "
                              "every second; elastic mode (default in a Slurm allocation: its "
                              "nodes that are up; else -H/--hostfile)")
    elastic.add_argument("--slots-per-host", dest="slots_per_host", type=_positive_int,
                         help="slots of a discovered host that names none (default: 1, or the "
                              "Slurm allocation's tasks per node)")
    elastic.add_argument("--elastic-timeout", type=_non_negative,
                         help="seconds to wait for enough slots before failing (default: "
                              "MPIREP_ELASTIC_TIMEOUT or HOROVOD_ELASTIC_TIMEOUT, else 600)")
    elastic.add_argument("--reset-limit", type=_non_negative_int,
                         help="resets (hosts lost or added) allowed before the job fails "
                              "(default: no limit)")
    elastic.add_argument("--blacklist-cooldown-range", type=_positive_int, nargs=2,
                         metavar=("MIN", "MAX"),
                         help="a failed host may come back after MIN seconds, doubling with "
                              "every failure up to MAX (default: never)")
    elastic.add_argument("--elastic-shared-dir", metavar="DIR",
                         help="also keep each commit in DIR, which every host must see")
    elastic.add_argument("--elastic-store-dir", metavar="DIR", default="/dev/shm",
                         help="each host's own directory for its copy of commits "
                              "(default: /dev/shm)")

    add_tuning_flags(p.add_argument_group("mpirep tuning (passed to ranks as MPIREP_* variables)"),
                     _non_negative)

    ignored = p.add_argument_group("horovodrun flags accepted and ignored (with a warning)")
    for flag, takes_value in IGNORED_HOROVOD_FLAGS:
        ignored.add_argument(flag, action=_Ignored, nargs=1 if takes_value else 0,
                             help=argparse.SUPPRESS)
    p.set_defaults(ignored=[])
    return p


def parse(argv):
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command and args.command[0] == "--":
        args.command = args.command[1:]
    return parser, args
