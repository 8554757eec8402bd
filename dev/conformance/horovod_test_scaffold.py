"""Stand-ins for the few Horovod internals that Horovod's test files import but that are test
scaffolding rather than API a training script uses (see docs/testing.md). The conformance run
rewrites those imports to this module."""

import os
import threading

from packaging import version


def get_env_rank_and_size():
    """This process's (rank, size) as the MPI launcher set them, (0, 1) outside a launcher."""
    for rank_name, size_name in (("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"),
                                 ("PMI_RANK", "PMI_SIZE")):
        if rank_name in os.environ and size_name in os.environ:
            return int(os.environ[rank_name]), int(os.environ[size_name])
    return 0, 1


def is_version_greater_equal_than(ver, target):
    return version.parse(ver) >= version.parse(target)


def in_thread(target, args=(), name=None, daemon=True, silent=False):
    """Starts ``target(*args)`` on a new thread and returns the thread."""
    def body():
        try:
            target(*args)
        except Exception:
            if not silent:
                raise

    thread = threading.Thread(target=body, name=name, daemon=daemon)
    thread.start()
    return thread
