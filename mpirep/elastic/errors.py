"""The two exceptions of elastic training, under mpirep's names and Horovod's."""
from mpirep.errors import MpirepError


class RanksLostError(MpirepError):
    """A collective could not complete because ranks were lost; ``run`` resumes from the last
    commit.  Horovod calls it HorovodInternalError."""


class HostsChangedInterrupt(MpirepError):
    """Raised on every rank at the same commit or check when hosts were added or removed;
    ``run`` resumes on the new set of hosts from that commit.  Horovod calls it
    HostsUpdatedInterrupt."""

    def __init__(self, skip_sync=False):
        super().__init__("the set of hosts changed")
        self.skip_sync = skip_sync


HorovodInternalError = RanksLostError
HostsUpdatedInterrupt = HostsChangedInterrupt
