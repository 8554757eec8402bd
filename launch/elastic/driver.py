"""mpirep-run's elastic driver: runs the job as a sequence of generations (docs/elastic.md).

Each generation is one launch (mpirun across the chosen hosts, or srun inside a Slurm
allocation).  When it loses a host the driver leaves that host out, waits up to the elastic
timeout for at least --min-np slots, and starts the next generation on what is there; the
ranks resume from their last commit.  When discovery finds hosts that would change the
assignment, the running ranks are told; they leave together at their next commit, and the
next generation starts on the larger set.
"""
import itertools
import shutil
import socket
import tempfile
import time

from .. import preflight, resolve, runner
from ..errors import LaunchError
from ..hosts import format_host_list, total_slots
from . import cleanup, plans
from .discovery_thread import INTERVAL_SECONDS, DiscoveryThread
from .generation import Generation
from .host_pool import HostPool
from .lifeline_server import LifelineServer
from .verdict import FAILED, SUCCESS


class Interrupted(Exception):
    """Ctrl-C, TERM or HUP reached the driver."""


class ElasticDriver:
    discovery_interval = INTERVAL_SECONDS

    def __init__(self, args, config, launcher, mpi_info, discovery, environ, say):
        self.args, self.config, self.launcher, self.mpi_info = args, config, launcher, mpi_info
        self.discovery, self.environ, self.say = discovery, environ, say
        self.pool = HostPool(config.cooldown)
        self.run_id = f"{socket.gethostname().split('.')[0]}-{time.time_ns() % 10**12:x}"
        self.received = []
        self._reachable = set()     # hosts that ran ranks or answered ssh
        self._finishers = []        # threads ending launchers of stopped generations

    def run(self):
        discoveries = DiscoveryThread(self.discovery, self.say, self.discovery_interval)
        self.received, restore_signals = runner.trap_stop_signals()
        server = LifelineServer()
        run_dir = tempfile.mkdtemp(prefix="mpirep-elastic-")
        used = set()
        try:
            return self._generations(server, discoveries, run_dir, used)
        except Interrupted:
            return 128 + self.received[0]
        finally:
            for finisher in self._finishers:
                finisher.join()
            discoveries.stop()
            server.shutdown()
            cleanup.remove_copies(sorted(used), self.launcher, resolve.ssh_args(self.args),
                                  self.config.store_dir, self.run_id)
            shutil.rmtree(run_dir, ignore_errors=True)
            restore_signals()

    def _generations(self, server, discoveries, run_dir, used):
        self._wait_for_slots(discoveries, self.config.start_np, "-np")
        address = f"{self._driver_host()}:{server.port}"
        resets = 0
        for number in itertools.count():
            hosts = self._assign()
            used.update(host.name for host in hosts)
            rank_env = plans.rank_environment(self.config, self.run_id, address, server.token,
                                              number)
            plan = plans.build(self.args, self.launcher, self.mpi_info, hosts, self.environ,
                               rank_env, run_dir, number)
            if self.launcher == "srun":
                plans.write_srun_hostfile(plans.srun_hostfile(run_dir, number), hosts)
            self.say(f"generation {number}: {total_slots(hosts)} ranks on "
                     f"{format_host_list(hosts)}")
            if self.args.verbose:
                self.say(plan.render())
            watched = Generation(number, hosts, server)
            outcome = watched.run(plan, self.environ, self.received,
                                  self._hosts_update_check(discoveries, hosts))
            if watched.finisher:
                self._finishers.append(watched.finisher)
            if self.received:
                raise Interrupted()
            if outcome.kind == SUCCESS:
                return 0
            if outcome.kind == FAILED:
                self.say(f"error: {outcome.message}")
                return outcome.status
            self._reachable.update(host.name for host in hosts)
            for host in outcome.lost_hosts:
                self.pool.fail(host)
                self._reachable.discard(host)
            why = (f"lost {', '.join(outcome.lost_hosts)}" if outcome.lost_hosts
                   else "the hosts changed")
            self.say(f"generation {number} ended: {why}")
            if self.config.reset_limit is not None and resets >= self.config.reset_limit:
                raise LaunchError(f"the job needs reset {resets + 1}, but --reset-limit is "
                                  f"{self.config.reset_limit}")
            resets += 1
            self._wait_for_slots(discoveries, self.config.min_np, "--min-np")

    def _assign(self):
        """The next generation's hosts; with mpirun, hosts not yet known to answer ssh are
        checked first, and those that do not are left out."""
        while True:
            hosts = self.pool.assign(self.config.max_np)
            unknown = [h for h in hosts if h.name not in self._reachable]
            if self.launcher != "mpirun" or not unknown:
                return hosts
            failed = preflight.unreachable_hosts(unknown, resolve.ssh_args(self.args),
                                                 resolve.start_timeout(self.args, self.environ))
            for name, why in failed.items():
                self.say(f"leaving out {name}: {why}")
                self.pool.fail(name)
            self._reachable.update(h.name for h in unknown if h.name not in failed)
            if total_slots(self.pool.plan(self.config.max_np)) < self.config.min_np:
                raise LaunchError(f"fewer than --min-np {self.config.min_np} slots answer ssh")

    def _hosts_update_check(self, discoveries, hosts):
        """A function that says, once per change, that the hosts usable now (discovered, and
        not left out or back from their cooldown) would change this generation's assignment
        and leave at least --min-np slots."""
        told = [hosts]

        def changed():
            self.pool.update(discoveries.latest())
            would = self.pool.plan(self.config.max_np)
            if would == told[0] or total_slots(would) < self.config.min_np:
                return False
            told[0] = would
            self.say(f"hosts changed: {format_host_list(would)} would be used; telling the ranks")
            return True

        return changed

    def _wait_for_slots(self, discoveries, needed, flag):
        give_up_at = time.monotonic() + self.config.timeout
        while True:
            self.pool.update(discoveries.latest())
            usable = self.pool.plan(self.config.max_np)
            if total_slots(usable) >= needed:
                return
            if self.received:
                raise Interrupted()
            if time.monotonic() >= give_up_at:
                failed = self.pool.failed_hosts()
                raise LaunchError(
                    f"only {total_slots(usable)} slots are usable "
                    f"({format_host_list(usable) or 'no hosts'}"
                    f"{'; left out after failing: ' + ', '.join(failed) if failed else ''}), "
                    f"fewer than {flag} {needed}, after waiting {self.config.timeout:g} s "
                    "(--elastic-timeout)")
            time.sleep(0.1)

    def _driver_host(self):
        """The name ranks reach this machine by."""
        return self.environ.get("MPIREP_ELASTIC_DRIVER_HOST") or socket.gethostname()

