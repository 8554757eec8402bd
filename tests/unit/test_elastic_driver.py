"""mpirep-run's elastic driver with the launch mocked: host discovery, the pool of usable
hosts (failures, cooldown, order, --max-np), the verdict on a generation, the driver's
decisions (restart, reset limit, elastic timeout) and a generation watched over real lifeline
sockets with a stand-in launcher."""
import pathlib
import socket
import sys
import threading
import time

import pytest

sys.path.append(str(pathlib.Path(__file__).resolve().parents[2]))
from launch import mpi_probe, options  # noqa: E402
from launch.elastic import config as elastic_config  # noqa: E402
from launch.elastic import discovery, driver, generation, verdict  # noqa: E402
from launch.elastic.host_pool import HostPool  # noqa: E402
from launch.elastic.lifeline_server import LifelineServer  # noqa: E402
from launch.errors import LaunchError  # noqa: E402
from launch.hosts import Host  # noqa: E402
from launch.job import Plan  # noqa: E402
from mpirep.elastic import protocol  # noqa: E402

OMPI = mpi_probe.MPIInfo(mpi_probe.OPEN_MPI, "4.1.4", "/usr/bin/mpirun")


# Discovery

def test_discovered_lines_with_and_without_slots():
    assert discovery.parse_discovered("h1:2\nh2\n\n  h3:4  \nh1:2\n", 3) == \
        {"h1": 2, "h2": 3, "h3": 4}


@pytest.mark.parametrize("line", ["h1:0", "h1:x", "h1:2,h2:2", "h 1"])
def test_bad_discovered_lines_name_the_line(line):
    with pytest.raises(discovery.DiscoveryError, match="host discovery printed"):
        discovery.parse_discovered(line, 1)


def test_discovery_script_runs_in_a_shell_and_its_failure_is_reported(tmp_path):
    script = tmp_path / "discover.sh"
    script.write_text("#!/bin/sh\necho h1:2\necho h2\n")
    script.chmod(0o755)
    assert discovery.ScriptDiscovery(str(script), 2).discover() == {"h1": 2, "h2": 2}
    with pytest.raises(discovery.DiscoveryError, match="exit status 3: nope"):
        discovery.ScriptDiscovery("echo nope >&2; exit 3", 1).discover()


def test_slurm_tasks_per_node():
    assert discovery.tasks_per_node("2(x3),1", 4) == [2, 2, 2, 1]
    with pytest.raises(discovery.DiscoveryError, match="names 2 nodes, the allocation has 3"):
        discovery.tasks_per_node("2(x2)", 3)


# The pool of hosts

class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def test_pool_keeps_the_last_assignment_first_and_caps_at_max_np():
    pool = HostPool()
    pool.update({"a": 2, "b": 2})
    assert pool.assign() == [Host("a", 2), Host("b", 2)]
    pool.update({"c": 4, "b": 2, "a": 2})
    assert pool.plan() == [Host("a", 2), Host("b", 2), Host("c", 4)]
    assert pool.plan(max_np=5) == [Host("a", 2), Host("b", 2), Host("c", 1)]
    pool.update({"c": 4, "b": 2})      # a is gone from discovery
    assert pool.assign() == [Host("b", 2), Host("c", 4)]
    pool.update({"a": 2, "b": 2, "c": 4})
    assert pool.plan() == [Host("b", 2), Host("c", 4), Host("a", 2)]


def test_a_failed_host_stays_out_for_good_without_a_cooldown():
    clock = Clock()
    pool = HostPool(clock=clock)
    pool.update({"a": 1, "b": 1})
    pool.fail("b")
    clock.now += 1e6
    assert pool.plan() == [Host("a", 1)] and pool.failed_hosts() == ["b"]


def test_cooldown_doubles_with_each_failure_up_to_its_maximum():
    clock = Clock()
    pool = HostPool(cooldown=(10, 25), clock=clock)
    pool.update({"a": 1, "b": 1})
    for expected_out in (10, 20, 25, 25):
        pool.fail("b")
        clock.now += expected_out - 0.5
        assert pool.plan() == [Host("a", 1)]
        clock.now += 1
        assert pool.plan() == [Host("a", 1), Host("b", 1)]


# The verdict on one generation

R = verdict.RankRecord


def test_the_first_error_is_reported_and_never_retried():
    records = [R("h1", True, protocol.ERROR, "ShutdownError: rank 1 failed", said_at=2),
               R("h1", True, protocol.ERROR, "ValueError: bad", said_at=1),
               R("h2", True, quiet=True)]
    outcome = verdict.judge(records, 1)
    assert outcome.kind == verdict.FAILED and outcome.status == 1
    assert outcome.message.startswith("rank 1 on h1 raised ValueError: bad;")


def test_ranks_that_went_quiet_lose_their_host():
    records = [R("h1", True, protocol.STOPPED), R("h1", True, protocol.STOPPED),
               R("h2", True, quiet=True), R("h2", True, protocol.SIGNALLED, quiet=True)]
    assert verdict.judge(records, 137) == verdict.Outcome(verdict.RESTART, lost_hosts=("h2",))


def test_a_host_that_no_longer_answers_is_blamed_not_the_ranks_its_loss_took_down():
    records = [R("h1", True, protocol.SIGNALLED, quiet=True), R("h2", True, open_at_end=True)]
    assert verdict.judge(records, 1).lost_hosts == ("h2",)


def test_ranks_that_never_connected_lose_their_host_when_others_did():
    records = [R("h1", True, protocol.STOPPED), R("h2")]
    assert verdict.judge(records, 1).lost_hosts == ("h2",)
    nobody = verdict.judge([R("h1"), R("h2")], 2)
    assert nobody.kind == verdict.FAILED and nobody.status == 2
    assert "before any rank called mpirep.init()" in nobody.message


def test_restart_success_and_a_plain_failure():
    restart = [R("h1", True, protocol.RESTART), R("h2", True, protocol.STOPPED)]
    assert verdict.judge(restart, 0) == verdict.Outcome(verdict.RESTART)
    done = [R("h1", True, protocol.EXIT), R("h2", True, protocol.EXIT)]
    assert verdict.judge(done, 0).kind == verdict.SUCCESS
    exited = verdict.judge(done, 3)
    assert exited.kind == verdict.FAILED and exited.status == 3


# The driver's decisions, with generations and discovery scripted

class ScriptedDiscovery:
    def __init__(self, *answers):
        self.answers = list(answers)

    def discover(self):
        return self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]


def make_driver(monkeypatch, argv, found, outcomes):
    args = options.parse(argv + ["python", "train.py"])[1]
    config = elastic_config.from_args(args, {})
    said, started = [], []

    def fake_run(self, plan, environ, received, hosts_updated):
        started.append((self.number, [(h, len([r for r in self.records if r.host == h]))
                                      for h in dict.fromkeys(r.host for r in self.records)],
                        dict(plan.env)))
        return outcomes.pop(0)

    monkeypatch.setattr(generation.Generation, "run", fake_run)
    monkeypatch.setattr(driver.cleanup, "remove_copies", lambda *a: None)
    the_driver = driver.ElasticDriver(args, config, "mpirun", OMPI,
                                      ScriptedDiscovery(*found), {}, said.append)
    the_driver._reachable = {"h1", "h2", "h3"}
    return the_driver, said, started


def test_a_lost_host_is_left_out_and_the_job_goes_on(monkeypatch):
    the_driver, said, started = make_driver(
        monkeypatch, ["--min-np", "2", "-H", "h1:2,h2:2"], [{"h1": 2, "h2": 2}],
        [verdict.Outcome(verdict.RESTART, lost_hosts=("h2",)), verdict.Outcome(verdict.SUCCESS)])
    assert the_driver.run() == 0
    assert [(n, hosts) for n, hosts, _ in started] == [(0, [("h1", 2), ("h2", 2)]),
                                                      (1, [("h1", 2)])]
    env0, env1 = started[0][2], started[1][2]
    assert env0[protocol.GENERATION] == "0" and env1[protocol.GENERATION] == "1"
    assert env0[protocol.RUN_ID] == env1[protocol.RUN_ID]
    assert env0[protocol.DRIVER] == env1[protocol.DRIVER]
    assert env0[protocol.STORE_DIR] == "/dev/shm"
    assert "generation 0 ended: lost h2" in said


def test_the_reset_limit_ends_the_job(monkeypatch):
    the_driver, said, started = make_driver(
        monkeypatch, ["--min-np", "1", "--reset-limit", "1", "-H", "h1:1,h2:1,h3:1"],
        [{"h1": 1, "h2": 1, "h3": 1}],
        [verdict.Outcome(verdict.RESTART, lost_hosts=("h3",)),
         verdict.Outcome(verdict.RESTART, lost_hosts=("h2",))])
    with pytest.raises(LaunchError, match="the job needs reset 2, but --reset-limit is 1"):
        the_driver.run()
    assert len(started) == 2


def test_too_few_slots_past_the_elastic_timeout(monkeypatch):
    the_driver, said, started = make_driver(
        monkeypatch, ["--min-np", "3", "--elastic-timeout", "0.3", "-H", "h1:2,h2:2"],
        [{"h1": 2, "h2": 2}], [verdict.Outcome(verdict.RESTART, lost_hosts=("h2",))])
    with pytest.raises(LaunchError, match=r"only 2 slots are usable \(h1:2; left out after "
                                          r"failing: h2\), fewer than --min-np 3, after "
                                          r"waiting 0.3 s \(--elastic-timeout\)"):
        the_driver.run()


def test_the_first_generation_waits_for_np_slots(monkeypatch):
    the_driver, said, started = make_driver(
        monkeypatch, ["-np", "4", "--min-np", "2", "--elastic-timeout", "30",
                      "--host-discovery-script", "unused"],
        [{"h1": 2}, {"h1": 2}, {"h1": 2, "h2": 2}], [verdict.Outcome(verdict.SUCCESS)])
    the_driver.discovery_interval = 0.01
    assert the_driver.run() == 0
    assert started[0][1] == [("h1", 2), ("h2", 2)]


def test_a_failure_ends_the_job_with_its_status(monkeypatch):
    the_driver, said, _ = make_driver(
        monkeypatch, ["--min-np", "1", "-H", "h1:1"], [{"h1": 1}],
        [verdict.Outcome(verdict.FAILED, 7, "rank 0 on h1 raised ValueError: x")])
    assert the_driver.run() == 7
    assert "error: rank 0 on h1 raised ValueError: x" in said


@pytest.mark.parametrize("argv, error", [
    (["--max-np", "2", "-np", "3"], "--max-np 2 is below the 3 ranks to start with"),
    (["--min-np", "3", "-np", "2"], "-np 2 is below --min-np 3"),
    (["--max-np", "4"], "elastic mode needs -np or --min-np"),
    (["--min-np", "1", "--blacklist-cooldown-range", "5", "2"], "--blacklist-cooldown-range"),
])
def test_inconsistent_flags(argv, error):
    args = options.parse(argv + ["python", "t.py"])[1]
    with pytest.raises(LaunchError, match=error.replace("(", r"\(")):
        elastic_config.from_args(args, {})


def test_elastic_timeout_from_the_environment():
    args = options.parse(["--min-np", "1", "python", "t.py"])[1]
    assert elastic_config.from_args(args, {"HOROVOD_ELASTIC_TIMEOUT": "12"}).timeout == 12.0
    assert elastic_config.from_args(args, {}).timeout == 600.0


# A generation over real lifeline sockets, with a stand-in launcher

class Rank:
    """A rank's end of a lifeline, in this process; it obeys a stop as a rank does."""

    def __init__(self, server, number, rank, size, token=None):
        self.sock = socket.create_connection(("127.0.0.1", server.port))
        self.sock.sendall(protocol.encode(protocol.HELLO, token=token or server.token,
                                          generation=number, rank=rank, size=size,
                                          host="x", pid=0))
        self.heard = []
        self.reader = threading.Thread(target=self._listen, daemon=True)
        self.reader.start()

    def _listen(self):
        try:
            for line in self.sock.makefile("rb"):
                self.heard.append(protocol.decode(line)["kind"])
                if self.heard[-1] == protocol.STOP:
                    self.say(protocol.STOPPED)
                    self.end()
                    return
        except OSError:   # the test ended this rank itself meanwhile
            pass

    def say(self, kind, **fields):
        self.sock.sendall(protocol.encode(kind, **fields))

    def end(self):
        """What the kernel does when the process dies (close alone would wait for the reader)."""
        self.sock.shutdown(socket.SHUT_RDWR)
        self.sock.close()


def until(condition, seconds=10):
    for _ in range(int(seconds / 0.01)):
        if condition():
            return
        threading.Event().wait(0.01)
    raise AssertionError("condition not met")


def watch(server, gen, launcher_code, script):
    """Runs the generation with a stand-in launcher (python -c launcher_code) while
    ``script(ranks)`` plays the ranks."""
    plan = Plan([sys.executable, "-c", launcher_code], {})
    updates = []
    result = {}
    thread = threading.Thread(target=lambda: result.update(
        outcome=gen.run(plan, {}, [], lambda: bool(updates) and updates.pop())))
    thread.start()
    script(updates)
    thread.join(timeout=60)
    assert not thread.is_alive()
    return result["outcome"]


def test_a_quiet_rank_stops_the_others_and_loses_its_host():
    server = LifelineServer()
    gen = generation.Generation(3, [Host("h1", 2), Host("h2", 1)], server)
    ranks = []

    def script(updates):
        ranks.extend(Rank(server, 3, r, 3) for r in range(3))
        Rank(server, 3, 0, 3, token="wrong")            # dropped unseen
        Rank(server, 2, 1, 3)                           # an earlier generation's: closed
        until(lambda: len(gen.connections) == 3)
        ranks[2].end()                                  # h2's rank dies
        for rank in ranks[:2]:
            rank.reader.join(timeout=10)

    started = time.monotonic()
    outcome = watch(server, gen, "import time; time.sleep(30)", script)
    assert [rank.heard for rank in ranks[:2]] == [[protocol.STOP], [protocol.STOP]]
    assert outcome == verdict.Outcome(verdict.RESTART, lost_hosts=("h2",))
    # Every lifeline closed: the verdict comes without waiting for the launcher, which is
    # ended in the background.
    assert time.monotonic() - started < 20
    gen.finisher.join(timeout=30)
    assert not gen.finisher.is_alive()
    server.shutdown()


def test_hosts_updates_reach_every_rank_once_all_listen():
    server = LifelineServer()
    gen = generation.Generation(0, [Host("h1", 2)], server)
    ranks = []

    def script(updates):
        ranks.append(Rank(server, 0, 0, 2))
        updates.append(True)
        ranks.append(Rank(server, 0, 1, 2))
        for rank in ranks:
            until(lambda: protocol.HOSTS_UPDATED in rank.heard)
            rank.say(protocol.RESTART, reason="HostsChangedInterrupt", together=True)
            rank.end()

    outcome = watch(server, gen, "import time; time.sleep(1)", script)
    assert outcome == verdict.Outcome(verdict.RESTART)
    # Each heard the update once, and no stop: ranks that restart together leave by themselves.
    assert [rank.heard for rank in ranks] == [[protocol.HOSTS_UPDATED]] * 2
    server.shutdown()


# The first generation's plan, as --dry-run prints it

def dry_run(monkeypatch, capsys, argv, environ):
    from launch import cli, hosts

    monkeypatch.setattr(mpi_probe, "probe", lambda environ: OMPI)
    monkeypatch.setattr(hosts, "local_names", lambda: {"localhost", "here"})
    assert cli.main(["--dry-run"] + argv + ["python", "train.py"], environ) == 0
    return capsys.readouterr().out.split()


def test_dry_run_under_mpirun_passes_the_driver_to_every_rank(monkeypatch, capsys):
    words = dry_run(monkeypatch, capsys, ["--min-np", "2", "-H", "a:2,b:2"],
                    {"PATH": "/usr/bin"})
    assert words[words.index("-H") + 1] == "a:2,b:2" and words[words.index("-np") + 1] == "4"
    for name in (protocol.DRIVER, protocol.TOKEN, protocol.RUN_ID, protocol.GENERATION,
                 protocol.STORE_DIR):
        assert name in words[words.index("-x"):]
    assert f"{protocol.GENERATION}=0" in words and words[-2:] == ["python", "train.py"]


def test_dry_run_under_srun_places_tasks_through_slurm_hostfile(monkeypatch, capsys):
    words = dry_run(monkeypatch, capsys,
                    ["--min-np", "2", "--host-discovery-script", "echo n1:2; echo n2"],
                    {"PATH": "/usr/bin", "SLURM_JOB_ID": "7"})
    assert "SLURM_HOSTFILE=RUNDIR/hosts.0" in words
    srun = words.index("srun")
    assert words[srun + 1] == "--distribution=arbitrary"
    assert words[words.index("--ntasks") + 1] == "3"
