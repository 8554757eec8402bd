"""Exceptions raised by mpirep, and the mapping from the core's status codes to them."""


class MpirepError(RuntimeError):
    """Base class of every error mpirep raises."""


class MismatchError(MpirepError):
    """Ranks disagreed about a tensor (shape, dtype, op, root, scale factors or collective).

    Raised with the same message on every rank that submitted the tensor."""


class InvalidArgumentError(MpirepError, ValueError):
    """Bad input that this rank alone can see: a root out of range, bad splits, a reused name."""


class UnsupportedError(MpirepError, TypeError):
    """A valid request the core cannot carry out, such as an unsupported dtype."""


class NotInitializedError(MpirepError, ValueError):
    """mpirep was used before init() or after shutdown()."""


class ShutdownError(MpirepError):
    """The operation could not run because mpirep, or another rank, shut down."""


class StallError(MpirepError):
    """A collective waited longer than the stall shutdown time for some rank, typically one that
    submitted it under another name or not at all.

    Raised with the same message, naming every such tensor and its missing ranks, on every rank
    that submitted one of them; a rank that submits one of them later gets it too. The next
    collectives work."""


# The exception for each of the core's status names (mpirep._core.STATUS, from common.h).
_CLASS_BY_STATUS = {
    "invalid_argument": InvalidArgumentError,
    "mismatch": MismatchError,
    "shut_down": ShutdownError,
    "unsupported": UnsupportedError,
    "stalled": StallError,
    "not_initialized": NotInitializedError,
    "internal": MpirepError,
}


def status_name(error):
    """The core's status name for an mpirep exception ("internal" for any other)."""
    for name, cls in _CLASS_BY_STATUS.items():
        if type(error) is cls:
            return name
    return "internal"


_classes = None


def raise_for_status(code, message):
    """Raises the exception for a non-OK core status code."""
    global _classes
    if _classes is None:
        from mpirep import _core  # imported late: this module is also used before the core loads

        _classes = {code: _CLASS_BY_STATUS[name] for name, code in _core.STATUS.items() if name != "ok"}
    raise _classes.get(code, MpirepError)(message)
