"""The elastic flags of mpirep-run, checked and resolved, with Horovod's defaults."""
from __future__ import annotations

import dataclasses

from ..errors import LaunchError

DEFAULT_TIMEOUT = 600.0   # seconds, as horovodrun's --elastic-timeout
COOLDOWN_BOUNDS = (1, 3600)


def requested(args):
    """Elastic mode is on with a discovery script, --min-np or --max-np (horovodrun turns it
    on with the first two)."""
    return bool(args.host_discovery_script or args.min_np or args.max_np)


@dataclasses.dataclass(frozen=True)
class ElasticConfig:
    start_np: int              # slots to wait for before the first generation
    min_np: int                # fewer than this and training waits, then fails
    max_np: int | None         # never more ranks than this (None: as many as there are slots)
    timeout: float             # how long to wait for enough slots
    reset_limit: int | None    # resets allowed (None: any number)
    cooldown: tuple | None     # (min, max) seconds a failed host stays out; None: for good
    shared_dir: str | None     # a directory every host sees, for one more copy of commits
    store_dir: str             # each host's own directory for its copies


def _timeout(args, environ):
    if args.elastic_timeout is not None:
        return args.elastic_timeout
    for name in ("MPIREP_ELASTIC_TIMEOUT", "HOROVOD_ELASTIC_TIMEOUT"):
        if environ.get(name):
            try:
                return float(environ[name])
            except ValueError:
                raise LaunchError(f"{name}={environ[name]!r} is not a number of seconds") from None
    return DEFAULT_TIMEOUT


def from_args(args, environ):
    min_np = args.min_np or args.num_proc
    if min_np is None:
        raise LaunchError("elastic mode needs -np or --min-np: how many ranks training needs")
    start_np = args.num_proc or min_np
    if start_np < min_np:
        raise LaunchError(f"-np {start_np} is below --min-np {min_np}")
    if args.max_np is not None and args.max_np < start_np:
        raise LaunchError(f"--max-np {args.max_np} is below the {start_np} ranks to start with")
    cooldown = tuple(args.blacklist_cooldown_range) if args.blacklist_cooldown_range else None
    if cooldown and not COOLDOWN_BOUNDS[0] <= cooldown[0] <= cooldown[1] <= COOLDOWN_BOUNDS[1]:
        raise LaunchError("--blacklist-cooldown-range MIN MAX needs "
                          f"{COOLDOWN_BOUNDS[0]} <= MIN <= MAX <= {COOLDOWN_BOUNDS[1]} seconds")
    return ElasticConfig(start_np=start_np, min_np=min_np, max_np=args.max_np,
                         timeout=_timeout(args, environ), reset_limit=args.reset_limit,
                         cooldown=cooldown, shared_dir=args.elastic_shared_dir,
                         store_dir=args.elastic_store_dir)
