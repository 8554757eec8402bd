"""mpirep's settings: one typed object, read once when mpirep is initialised.

Each setting comes from, in order of precedence: an argument of ``mpirep.init``, the
``MPIREP_<NAME>`` environment variable, the ``HOROVOD_<NAME>`` variable (so job files written
for Horovod keep working), and the default below.
"""

import dataclasses
import os

MiB = 1024 * 1024


@dataclasses.dataclass(frozen=True)
class Config:
    #: Largest packed buffer one fused allreduce may use, in bytes. Fusion is for small tensors
    #: (large ones run alone, see native/fusion.h), and a batch that stays in the CPU's caches
    #: packs, reduces and unpacks faster than a large one: in one ResNet-50 gradient round at
    #: np=2, 64 MiB batches took 92 ms against 34-49 ms with 1-4 MiB (other runs on this noisy
    #: host showed no difference; docs/benchmarks.md).
    fusion_threshold: int = 2 * MiB
    #: Least time between two negotiation rounds on the coordinator, in milliseconds. 0 starts
    #: a round as soon as a tensor is ready everywhere; a few ms trades latency for more fusion.
    cycle_time_ms: float = 0.0
    #: Unit of pipelining inside the ring allreduce, in bytes.
    chunk_bytes: int = 1 * MiB
    #: Warn about a collective that some ranks have waited on this long, in seconds (0: never).
    stall_check_time_seconds: float = 60.0
    #: Abort the job when a collective has waited this long, in seconds (0: never).
    stall_shutdown_time_seconds: float = 0.0
    #: Rank 0 writes a Chrome trace of negotiation and collectives to this file ("": none).
    timeline: str = ""

    @classmethod
    def load(cls, environ=None, **overrides):
        """The configuration from ``overrides`` (init's arguments) and the environment."""
        environ = os.environ if environ is None else environ
        unknown = set(overrides) - {f.name for f in dataclasses.fields(cls)}
        if unknown:
            raise TypeError(f"unknown mpirep setting(s): {', '.join(sorted(unknown))}")
        values = {}
        for field in dataclasses.fields(cls):
            if overrides.get(field.name) is not None:
                values[field.name] = field.type(overrides[field.name])
                continue
            raw = _from_environment(environ, field.name)
            if raw is not None:
                values[field.name] = _parse(field, raw)
        if _from_environment(environ, "stall_check_disable") not in (None, "", "0"):
            values["stall_check_time_seconds"] = 0.0
        config = cls(**values)
        config._check()
        return config

    def _check(self):
        if self.fusion_threshold < 0:
            raise ValueError("fusion_threshold must be >= 0 bytes")
        if self.chunk_bytes < 64:
            raise ValueError("chunk_bytes must be at least 64")
        for name in ("cycle_time_ms", "stall_check_time_seconds", "stall_shutdown_time_seconds"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0")


# Environment names that differ from the setting's upper-cased name.
_ENV_NAMES = {"cycle_time_ms": "CYCLE_TIME"}


def _from_environment(environ, name):
    key = _ENV_NAMES.get(name, name.upper())
    for prefix in ("MPIREP_", "HOROVOD_"):
        if prefix + key in environ:
            return environ[prefix + key]
    return None


def _parse(field, raw):
    try:
        return field.type(float(raw)) if field.type is int else field.type(raw)
    except ValueError:
        raise ValueError(f"mpirep setting {field.name}: cannot read {raw!r} as {field.type.__name__}") from None
