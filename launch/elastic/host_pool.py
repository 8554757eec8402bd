"""The hosts an elastic job may use: the newest discovery, less the hosts that failed.

A failed host is left out for good, or, with a cooldown range (MIN, MAX), for MIN seconds
after its first failure, doubling with each failure up to MAX.  Ranks go to hosts in a stable
order: the hosts of the last generation first, in their order, then the others in the order
they were first discovered; so rank 0 stays on a host that holds the last commit.
"""
import time

from ..hosts import Host


class HostPool:
    def __init__(self, cooldown=None, clock=time.monotonic):
        self.cooldown = cooldown
        self.clock = clock
        self.discovered = {}     # host -> slots, from the newest discovery
        self._seen = []          # every host ever discovered, in order of first discovery
        self._failures = {}      # host -> times it failed
        self._out_until = {}     # host -> clock time it may come back (inf: never)
        self._last = []          # host names of the last assignment, in rank order

    def update(self, discovered):
        self.discovered = dict(discovered)
        self._seen += [name for name in discovered if name not in self._seen]

    def fail(self, host):
        count = self._failures[host] = self._failures.get(host, 0) + 1
        if self.cooldown is None:
            self._out_until[host] = float("inf")
        else:
            low, high = self.cooldown
            self._out_until[host] = self.clock() + min(high, low * 2 ** (count - 1))

    def failed_hosts(self):
        """The hosts left out now."""
        now = self.clock()
        return [host for host, until in self._out_until.items() if until > now]

    def usable(self):
        """[Host] that ranks may use now, in assignment order."""
        out = set(self.failed_hosts())
        order = self._last + [name for name in self._seen if name not in self._last]
        return [Host(name, self.discovered[name]) for name in order
                if name in self.discovered and name not in out]

    def plan(self, max_np=None):
        """The hosts, each with the slots to fill, that the next generation would use."""
        hosts, left = [], max_np
        for host in self.usable():
            slots = host.slots if left is None else min(host.slots, left)
            if slots:
                hosts.append(Host(host.name, slots))
            if left is not None:
                left -= slots
        return hosts

    def assign(self, max_np=None):
        """plan(), remembered as the order the following generations start from."""
        hosts = self.plan(max_np)
        self._last = [host.name for host in hosts]
        return hosts
