"""Starting and stopping mpirep, and where this process stands among the others."""

import atexit
import dataclasses
import sys
import warnings

from mpirep import keras2_hint
from mpirep._core_loader import core
from mpirep.settings import Config
from mpirep.errors import InvalidArgumentError, NotInitializedError

_config = None
_topology = None
_exit_hook_registered = False


def init(comm=None, **settings):
    """Starts mpirep on every rank of ``comm`` (default: ``MPI.COMM_WORLD``). Collective.

    ``comm`` may be any mpi4py intracommunicator; mpirep works on its own duplicate of it. As in
    Horovod it may also be a list of ranks of ``MPI.COMM_WORLD``: then only those ranks call init,
    and mpirep runs among them, numbered in the list's order.
    ``settings`` override the environment, see :class:`mpirep.Config`. Calling init
    again while initialised does nothing, as in Horovod.
    """
    global _config, _topology, _exit_hook_registered
    native = core()
    if native.is_initialized():
        if settings and Config.load(**settings) != _config:
            warnings.warn("mpirep is already initialised; the new settings are ignored "
                          "(call mpirep.shutdown() first to change them)", stacklevel=2)
        return
    from mpi4py import MPI

    config = Config.load(**settings)
    from mpirep.elastic.settings import settings as elastic_settings

    if elastic_settings().launched:  # a lost peer goes to the driver, which restarts the job
        config = dataclasses.replace(config, elastic_peer_loss=True)
    if isinstance(comm, (list, tuple)):
        ranks = _communicator_of(comm)
        try:
            native.init(ranks.py2f(), config.as_text())
        finally:
            ranks.Free()  # mpirep works on its own duplicate
    else:
        native.init((MPI.COMM_WORLD if comm is None else comm).py2f(), config.as_text())
    _config = config
    _topology = native.topology()
    if not _exit_hook_registered:
        atexit.register(shutdown)  # runs before mpi4py finalises MPI
        sys.excepthook = _shutdown_on_uncaught(sys.excepthook)
        _exit_hook_registered = True
    # Elastic jobs (docs/elastic.md): each rank keeps a connection to mpirep-run's driver.
    from mpirep.elastic.lifeline import start_if_launched

    start_if_launched(_topology["rank"], _topology["size"])


def shutdown(reason=""):
    """Stops mpirep. Collective: returns once every rank has called it; operations still
    pending fail with :class:`mpirep.ShutdownError`. Safe to call when not initialised.

    ``reason`` says this rank is stopping because it failed: the other ranks' pending and
    later operations fail with an error that names this rank and quotes the reason. If they
    have not all shut down 5 s later (one is busy outside mpirep, or stuck), the job is
    aborted."""
    global _topology
    if _topology is None:
        return
    core().shutdown(reason)
    _topology = None


def dump_flight_record(reason="requested"):
    """Writes this rank's flight record now: its last collectives, what it has in flight, and
    on rank 0 what waits for which ranks, to ``<flight_recorder_dir>/rank<N>.json``; returns the
    file's path. ``python -m mpirep.diagnose DIR`` reads every rank's (docs/reliability.md).
    Not collective. Waits for the core's pass in progress to end."""
    _require_init()
    return core().dump_flight_record(str(reason))


def _shutdown_on_uncaught(previous_hook):
    """An excepthook that, after the usual traceback, tells the other ranks why this one is
    going away, so that they fail at once with that reason instead of waiting for it."""

    def hook(kind, value, traceback):
        previous_hook(kind, value, traceback)
        keras2 = keras2_hint.hint(kind, value, traceback)
        if keras2:
            print(keras2, file=sys.stderr, flush=True)
        shutdown(f"{kind.__name__}: {value}")

    return hook


def is_initialized():
    return _topology is not None


def config():
    """The settings given at the last init. Autotuning may change fusion_threshold,
    cycle_time_ms, chunk_bytes and hierarchical_allreduce afterwards;
    mpirep._core.current_setting(name) reads those."""
    _require_init()
    return _config


def _communicator_of(ranks):
    """A communicator of ``ranks`` of MPI.COMM_WORLD, made by those ranks alone."""
    from mpi4py import MPI

    world = MPI.COMM_WORLD
    members = [int(r) for r in ranks]
    if len(set(members)) != len(members) or not all(0 <= r < world.size for r in members):
        raise InvalidArgumentError(f"rank {world.rank}: init needs distinct ranks from 0 to "
                                   f"{world.size - 1}, got {list(ranks)}")
    if world.rank not in members:
        raise InvalidArgumentError(f"rank {world.rank}: init was given the ranks {members}, "
                                   f"which do not include this rank; only they call init")
    group = world.Get_group().Incl(members)
    try:
        return world.Create_group(group)
    finally:
        group.Free()


def _require_init():
    if _topology is None:
        raise NotInitializedError("mpirep is not initialised: call mpirep.init() first")


def _topology_value(key):
    _require_init()
    return _topology[key]


def rank():
    """This process's rank, 0..size()-1."""
    return _topology_value("rank")


def size():
    """The number of ranks."""
    return _topology_value("size")


def local_rank():
    """This process's rank among the ranks on its host."""
    return _topology_value("local_rank")


def local_size():
    """The number of ranks on this host."""
    return _topology_value("local_size")


def cross_rank():
    """This host's index among the hosts (the rank among ranks with the same local_rank)."""
    return _topology_value("cross_rank")


def cross_size():
    """The number of ranks that share this process's local_rank (usually the host count)."""
    return _topology_value("cross_size")
