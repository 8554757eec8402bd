"""``mpirep.run(fn, np=...)``: Horovod's ``horovod.run``. Starts a job through mpirep-run's
machinery whose every rank calls ``fn``, and returns the ranks' results in rank order.

The function goes to the ranks, and their results come back, over one TCP listener in this
process, authenticated by a key only the job's ranks are given (multiprocessing.connection:
nothing is unpickled before the peer has proved it holds the key). Functions travel by
cloudpickle where it is installed (lambdas and closures too), else by pickle, which sends a
function by its name: each rank then loads the caller's main script first, under the name
``__mp_main__``, as multiprocessing's spawn start method does, so that its
``if __name__ == "__main__":`` block does not run again.
"""
import functools
import importlib
import os
import pickle
import secrets
import socket
import sys
import threading
import warnings
from multiprocessing.connection import Client, Listener

from mpirep.errors import MpirepError

ADDRESS_VARIABLE = "MPIREP_RUN_ADDRESS"
KEY_VARIABLE = "MPIREP_RUN_KEY"
ELASTIC_ARGUMENTS = ("min_num_proc", "max_num_proc", "min_np", "max_np", "slots", "reset_limit",
                     "cooldown_range", "host_discovery_script")


class RankError(MpirepError):
    """A rank's ``fn`` raised; ``rank`` is the rank, ``traceback`` its traceback's text, and
    ``__cause__`` the rank's exception itself where it could be sent back."""

    def __init__(self, message, rank, traceback):
        super().__init__(message)
        self.rank = rank
        self.traceback = traceback


def pickler():
    try:
        import cloudpickle
    except ImportError:
        return pickle
    return cloudpickle


def run(func, args=(), kwargs=None, num_proc=None, hosts=None, hostfile=None, start_timeout=None,
        ssh_port=None, ssh_identity_file=None, disable_cache=None, output_filename=None,
        verbose=None, use_gloo=None, use_mpi=None, mpi_args=None, network_interface=None,
        network_interfaces=None, executable=None, np=None, **elastic):
    """Runs ``func(*args, **kwargs)`` on every rank of a new job and returns the results, a
    list indexed by rank. ``np`` (Horovod's older name) or ``num_proc`` ranks; ``hosts``
    ("host:slots,...") or ``hostfile``; the other arguments are horovod.run's, passed to
    mpirep-run's flags of the same meaning. A rank whose ``func`` raises makes this raise
    :class:`RankError` naming it; a job that ends without every result raises
    :class:`MpirepError`."""
    unknown = set(elastic) - set(ELASTIC_ARGUMENTS)
    if unknown:
        raise TypeError(f"run() got unexpected keyword arguments {sorted(unknown)}")
    if any(value is not None for value in elastic.values()):
        raise MpirepError("mpirep.run starts fixed-size jobs; for elastic training "
                          f"({', '.join(sorted(elastic))}) start the script with mpirep-run "
                          "--min-np/--max-np (docs/elastic.md)")
    if use_gloo and use_mpi:
        raise ValueError("use_gloo and use_mpi cannot both be set")
    if use_gloo:
        warnings.warn("mpirep runs over MPI only: use_gloo=True is ignored", stacklevel=2)
    ranks = np if np is not None else num_proc
    if ranks is None:
        raise ValueError("run() needs np (or num_proc), the number of ranks")
    interfaces = network_interfaces or ([network_interface] if network_interface else [])
    flags = _flags(ranks, hosts, hostfile, start_timeout, ssh_port, ssh_identity_file,
                   disable_cache, output_filename, verbose, mpi_args, interfaces)
    payload = _payload(functools.partial(func, *args, **(kwargs or {})))
    with _Server(remote=_spans_hosts(hosts, hostfile)) as server:
        command = [executable or sys.executable, "-m", "mpirep.function_rank"]
        status = _launch(flags + ["--"] + command, server.environment(), payload, server)
    return _results(server.results, int(ranks), status)


def _flags(ranks, hosts, hostfile, start_timeout, ssh_port, ssh_identity_file, disable_cache,
           output_filename, verbose, mpi_args, interfaces):
    flags = ["-np", str(int(ranks))]
    named = {"-H": hosts, "--hostfile": hostfile, "--start-timeout": start_timeout,
             "--ssh-port": ssh_port, "--ssh-identity-file": ssh_identity_file,
             "--output-filename": output_filename, "--mpi-args": mpi_args}
    for flag, value in named.items():
        if value is not None:   # "--flag=value": a value may start with a dash (mpi_args)
            flags += [f"{flag}={value}"] if flag.startswith("--") else [flag, str(value)]
    for interface in interfaces:
        flags += ["--network-interface", interface]
    if disable_cache:
        flags.append("--disable-cache")
    if verbose:
        flags.append("--verbose")
    return flags


def _spans_hosts(hosts, hostfile):
    if hostfile:
        return True
    hosts_module = _launcher().hosts
    return bool(hosts) and not all(hosts_module.is_local(host)
                                   for host in hosts_module.parse_host_list(hosts))


def _launcher():
    """mpirep-run's package: installed as mpirep.launch; launch/ in a checkout not installed."""
    try:
        return importlib.import_module("mpirep.launch")
    except ImportError:
        return importlib.import_module("launch")


def _payload(function):
    module = pickler()
    try:
        blob = module.dumps(function)
    except Exception as err:
        raise MpirepError(f"run() cannot send the function to the ranks: {err} (define it at "
                          "the top level of a module, or install cloudpickle for lambdas and "
                          "closures)") from err
    main = sys.modules.get("__main__")
    main_path = getattr(main, "__file__", None) if module is pickle else None
    script_dir = os.path.abspath(sys.path[0]) if sys.path and sys.path[0] else os.getcwd()
    return pickle.dumps((module.__name__, main_path and os.path.abspath(main_path), script_dir,
                         blob))


def _launch(argv, environment, payload, server):
    launcher = _launcher()
    server.payload = payload
    _, parsed = launcher.options.parse(argv)
    try:
        return launcher.cli.launch(parsed, {**os.environ, **environment})
    except launcher.errors.LaunchError as err:
        raise MpirepError(f"run() could not start the job: {err}") from None


def _results(results, ranks, status):
    failed = sorted((order, rank) for rank, (ok, _, order) in results.items() if not ok)
    if failed:
        _, rank = failed[0]
        kind_and_message, traceback, error = results[rank][1]
        others = [r for _, r in failed[1:]]
        also = f" (ranks {others} failed after it)" if others else ""
        raise RankError(f"rank {rank} failed: {kind_and_message}{also}\n"
                        f"Traceback on rank {rank}:\n{traceback}", rank, traceback) from error
    missing = [rank for rank in range(ranks) if rank not in results]
    if missing or status != 0:
        raise MpirepError(f"the job ended with exit status {status}; ranks {missing} sent no "
                          "result (see their output above)")
    return [results[rank][1] for rank in range(ranks)]


class _Server:
    """The listener the ranks fetch the function from and send their results to:
    results[rank] = (ok, value or (error text, traceback, exception), arrival order)."""

    def __init__(self, remote):
        self._key = secrets.token_bytes(32)
        self._listener = Listener(("0.0.0.0" if remote else "127.0.0.1", 0), authkey=self._key)
        self._host = socket.getfqdn() if remote else "127.0.0.1"
        self.payload = None
        self.results = {}
        self._stopped = False
        self._thread = threading.Thread(target=self._serve, name="mpirep-run-results", daemon=True)

    def environment(self):
        port = self._listener.address[1]
        return {ADDRESS_VARIABLE: f"{self._host}:{port}", KEY_VARIABLE: self._key.hex()}

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        try:
            with Client(self._listener.address if self._host == "127.0.0.1"
                        else ("127.0.0.1", self._listener.address[1]), authkey=self._key) as c:
                c.send(("stop",))
        except OSError:
            pass
        self._thread.join(timeout=10)
        self._listener.close()

    def _serve(self):
        while True:
            try:
                connection = self._listener.accept()
            except Exception:   # a peer without the key, or one that left
                if self._stopped:
                    return
                continue
            with connection:
                try:
                    message = connection.recv()
                except (OSError, EOFError):
                    continue
                if message[0] == "stop":
                    self._stopped = True
                    return
                if message[0] == "function":
                    connection.send_bytes(self.payload)
                elif message[0] == "result":
                    _, rank, ok, blob = message
                    self.results[rank] = (ok, _load_result(ok, blob), len(self.results))


def _load_result(ok, blob):
    module = pickler()
    if ok:
        return module.loads(blob)
    text, traceback, exception_blob = blob
    try:
        error = module.loads(exception_blob) if exception_blob else None
    except Exception:   # the exception's class is not importable here
        error = None
    return text, traceback, error
