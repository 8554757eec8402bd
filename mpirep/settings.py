"""mpirep's settings: one typed object, ``mpirep.Config``, read once when mpirep is initialised
(``mpirep.config()`` returns the one in force).

The settings, their types, defaults, minimums and meanings are those of the one settings table,
native/core/settings.def, from which the C++ core is compiled too (docs/configuration.md lists them). Each
setting comes from, in order of precedence: an argument of ``mpirep.init``, the
``MPIREP_<NAME>`` environment variable, Horovod's variable (so job files written for Horovod
keep working), and the default. ``MPIREP_STALL_CHECK_DISABLE`` or Horovod's
``HOROVOD_STALL_CHECK_DISABLE``, set to anything but "" or "0", turns the stall warnings off.
"""

import dataclasses
import os

from mpirep._settings_table import SETTINGS

_STALL_CHECK_DISABLE = ("MPIREP_STALL_CHECK_DISABLE", "HOROVOD_STALL_CHECK_DISABLE")


class _Loading:
    @classmethod
    def load(cls, environ=None, **overrides):
        """The configuration from ``overrides`` (init's arguments) and the environment."""
        environ = os.environ if environ is None else environ
        unknown = set(overrides) - {s.name for s in SETTINGS}
        if unknown:
            raise TypeError(f"unknown mpirep setting(s): {', '.join(sorted(unknown))}")
        values = {}
        for setting in SETTINGS:
            if overrides.get(setting.name) is not None:
                values[setting.name] = _convert(setting, overrides[setting.name])
                continue
            raw = _from_environment(environ, setting)
            if raw is not None:
                values[setting.name] = _convert(setting, raw)
        if any(environ.get(name) not in (None, "", "0") for name in _STALL_CHECK_DISABLE):
            values["stall_check_time_seconds"] = 0.0
        return cls(**values)

    def __post_init__(self):
        for setting in SETTINGS:
            if setting.type is not str and getattr(self, setting.name) < setting.minimum:
                raise ValueError(f"mpirep setting {setting.name} must be at least {setting.minimum}")

    def as_text(self):
        """{name: value as text}, as the core's start takes them."""
        return {s.name: _text(getattr(self, s.name)) for s in SETTINGS}


Config = dataclasses.make_dataclass(
    "Config", [(s.name, s.type, dataclasses.field(default=s.default)) for s in SETTINGS],
    bases=(_Loading,), frozen=True, namespace={"__module__": __name__})
Config.__doc__ = "mpirep's settings:\n" + "\n".join(f"  {s.name}: {s.meaning}" for s in SETTINGS)


def _from_environment(environ, setting):
    for variable in ("MPIREP_" + setting.environment, setting.horovod_variable):
        if variable and variable in environ:
            return environ[variable]
    return None


_BOOL_WORDS = {"1": True, "true": True, "yes": True, "on": True,
               "0": False, "false": False, "no": False, "off": False, "": False}


def _convert(setting, value):
    try:
        if setting.type is bool:
            return _BOOL_WORDS[value.strip().lower()] if isinstance(value, str) else bool(value)
        if setting.type is int and isinstance(value, str):
            return int(float(value))  # "1e6" and "2097152.0" are numbers of bytes too
        return setting.type(value)
    except (ValueError, KeyError):
        raise ValueError(f"mpirep setting {setting.name}: cannot read {value!r} as "
                         f"{setting.type.__name__}") from None


def _text(value):
    if isinstance(value, bool):
        return "1" if value else "0"
    # repr of a float is exact, so the core reads back the same double
    return repr(value) if isinstance(value, float) else str(value)
