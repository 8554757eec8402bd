"""The one exception type mpirep-run reports as a plain message, without a traceback."""


class LaunchError(Exception):
    """Something the user can fix: a bad flag, host list or environment, or a missing MPI."""
