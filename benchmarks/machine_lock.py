"""The machine-wide lock that serialises everything that starts the clusters or emulated hosts
of dev/cluster/ (tests/cluster/run.sh takes the same one)."""
import contextlib
import fcntl
import os

LOCK = os.environ.get("MPIREP_CLUSTER_LOCK", "/tmp/mpirep-cluster.lock")


@contextlib.contextmanager
def cluster_lock():
    """Held while the body runs; waits for whoever holds it now."""
    with open(LOCK, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)
