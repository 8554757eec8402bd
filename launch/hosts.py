"""Host lists: `-H h1:2,h2:2` strings and hostfiles, parsed into (name, slots) pairs.

Hostfile lines may be written in Horovod's and Open MPI's form, `host slots=N` (Open MPI's
`max_slots=M` is accepted and ignored), in MPICH's form `host:N`, or as a bare `host` (one
slot).  `#` starts a comment.
"""
import os
import re
import socket
from dataclasses import dataclass

from .errors import LaunchError

_HOST_SLOTS = re.compile(r"^(?P<name>[^\s:#=]+)(?::(?P<slots>\d+))?$")


class HostError(LaunchError):
    """A host list or hostfile that cannot be understood."""


@dataclass(frozen=True)
class Host:
    name: str
    slots: int


def _positive(text, where):
    slots = int(text)
    if slots < 1:
        raise HostError(f"{where}: slots must be at least 1")
    return slots


def parse_host_list(text):
    """Parse `h1:2,h2,h3:4` (a host without a count has one slot)."""
    hosts = []
    for item in (part.strip() for part in text.split(",")):
        match = _HOST_SLOTS.match(item)
        if not match:
            raise HostError(f"bad host entry {item!r} in {text!r}; expected host or host:slots")
        slots = match.group("slots")
        hosts.append(Host(match.group("name"), _positive(slots, item) if slots else 1))
    return _merge(hosts)


def _parse_hostfile_line(line, where):
    fields = line.split()
    match = _HOST_SLOTS.match(fields[0])
    if not match:
        raise HostError(f"{where}: bad host {fields[0]!r}")
    slots = _positive(match.group("slots"), where) if match.group("slots") else 1
    for field in fields[1:]:
        key, _, value = field.partition("=")
        if key in ("slots", "max_slots", "max-slots") and value.isdigit():
            if key == "slots":
                slots = _positive(value, where)
        else:
            raise HostError(f"{where}: unknown field {field!r}; expected slots=N")
    return Host(match.group("name"), slots)


def parse_hostfile(path):
    hosts = []
    with open(path, encoding="utf-8") as f:
        for number, raw in enumerate(f, 1):
            line = raw.split("#", 1)[0].strip()
            if line:
                hosts.append(_parse_hostfile_line(line, f"{path}:{number}"))
    if not hosts:
        raise HostError(f"{path}: no hosts in the hostfile")
    return _merge(hosts)


def _merge(hosts):
    """A host named twice gets the sum of its slots, in order of first appearance."""
    slots = {}
    for host in hosts:
        slots[host.name] = slots.get(host.name, 0) + host.slots
    return [Host(name, count) for name, count in slots.items()]


def total_slots(hosts):
    return sum(host.slots for host in hosts)


def format_host_list(hosts):
    return ",".join(f"{host.name}:{host.slots}" for host in hosts)


def local_names():
    """Names under which this machine may appear in a host list."""
    name = socket.gethostname()
    return {"localhost", "127.0.0.1", "::1", name, name.split(".")[0], socket.getfqdn()}


def is_local(host):
    return host.name in local_names()


def local_core_count():
    """Physical cores usable by this process: Open MPI counts cores, not hardware threads,
    as a machine's slots, so oversubscription must be judged against the same number."""
    if not hasattr(os, "sched_getaffinity"):
        return os.cpu_count() or 1
    cpus = sorted(os.sched_getaffinity(0))
    cores = set()
    for cpu in cpus:
        topology = f"/sys/devices/system/cpu/cpu{cpu}/topology"
        try:
            with open(f"{topology}/physical_package_id") as package, open(f"{topology}/core_id") as core:
                cores.add((package.read().strip(), core.read().strip()))
        except OSError:
            return len(cpus)
    return len(cores) or len(cpus)
