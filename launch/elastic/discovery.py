"""Where ranks can run now: {host: slots}, in a stable order, from one of three sources.

ScriptDiscovery: the user's --host-discovery-script (Horovod's format: `host` or `host:slots`).
SlurmDiscovery:  inside an allocation, its nodes that Slurm does not report down, drained,
                 failed or not responding.
FixedDiscovery:  the hosts of -H/--hostfile.
"""
import re
import subprocess

from ..errors import LaunchError
from ..hosts import HostError, parse_host_list

SCRIPT_TIMEOUT = 30.0
_TASKS_PER_NODE = re.compile(r"^(\d+)(?:\(x(\d+)\))?$")
# sinfo's short states of nodes that cannot run tasks; a trailing * means "not responding".
_UNUSABLE = ("down", "drain", "drng", "fail", "futr", "maint", "boot", "powered", "powering",
             "inval", "unk")


class DiscoveryError(LaunchError):
    pass


def _run(argv, what, shell=False):
    try:
        done = subprocess.run(argv, shell=shell, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              stdin=subprocess.DEVNULL, text=True, timeout=SCRIPT_TIMEOUT)
    except subprocess.TimeoutExpired:
        raise DiscoveryError(f"{what} gave no answer in {SCRIPT_TIMEOUT:g} s") from None
    except OSError as err:
        raise DiscoveryError(f"cannot run {what}: {err}") from None
    if done.returncode != 0:
        raise DiscoveryError(f"{what} failed with exit status {done.returncode}: "
                             f"{done.stderr.strip()}")
    return done.stdout


def parse_discovered(text, default_slots):
    """{host: slots} from lines of `host` or `host:slots`, in the order first named."""
    found = {}
    for line in (line.strip() for line in text.splitlines()):
        if not line:
            continue
        name, has_slots, slots = line.partition(":")
        try:
            if "," in line:
                raise HostError("one host a line")
            (host,) = parse_host_list(f"{name}:{slots if has_slots else default_slots}")
        except HostError as err:
            raise DiscoveryError(f"host discovery printed {line!r}: {err}") from None
        found[host.name] = host.slots
    return found


class ScriptDiscovery:
    def __init__(self, script, default_slots):
        self.script = script
        self.default_slots = default_slots or 1

    def discover(self):
        text = _run(self.script, f"the host discovery script {self.script!r}", shell=True)
        return parse_discovered(text, self.default_slots)


class FixedDiscovery:
    def __init__(self, hosts):
        self.hosts = {host.name: host.slots for host in hosts}

    def discover(self):
        return dict(self.hosts)


def tasks_per_node(text, nodes):
    """Slurm's SLURM_TASKS_PER_NODE ("2(x3),1") as one count per node."""
    counts = []
    for part in text.split(","):
        match = _TASKS_PER_NODE.match(part.strip())
        if not match:
            raise DiscoveryError(f"cannot read SLURM_TASKS_PER_NODE={text!r}")
        counts += [int(match.group(1))] * int(match.group(2) or 1)
    if len(counts) != nodes:
        raise DiscoveryError(f"SLURM_TASKS_PER_NODE={text!r} names {len(counts)} nodes, the "
                             f"allocation has {nodes}")
    return counts


class SlurmDiscovery:
    def __init__(self, environ, slots_per_host):
        nodelist = environ.get("SLURM_JOB_NODELIST") or environ.get("SLURM_NODELIST")
        if not nodelist:
            raise DiscoveryError("inside a Slurm allocation without SLURM_JOB_NODELIST")
        self.nodes = _run(["scontrol", "show", "hostnames", nodelist],
                          "scontrol show hostnames").split()
        if slots_per_host:
            slots = [slots_per_host] * len(self.nodes)
        elif environ.get("SLURM_TASKS_PER_NODE"):
            slots = tasks_per_node(environ["SLURM_TASKS_PER_NODE"], len(self.nodes))
        else:
            slots = [1] * len(self.nodes)
        self.slots = dict(zip(self.nodes, slots))

    def discover(self):
        text = _run(["sinfo", "--noheader", "--Node", "--nodes", ",".join(self.nodes),
                     "--format", "%N %t"], "sinfo")
        down = {name for name, state in (line.split() for line in text.splitlines() if line.strip())
                if state.endswith("*") or state.rstrip("*~#!%$@^-").startswith(_UNUSABLE)}
        return {node: self.slots[node] for node in self.nodes if node not in down}
