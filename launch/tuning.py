"""The tuning flags of mpirep-run: one for each setting of the settings table
(native/core/settings.def) that names a flag, turned into the MPIREP_* variable that every
rank's core reads. Reading the table loads neither mpirep's native core nor TensorFlow."""

from mpirep._settings_table import FLAG_UNIT_FACTORS, SETTINGS, SWITCH, negated_flag

TUNED_SETTINGS = tuple(s for s in SETTINGS if s.flag)
_CACHE_CAPACITY = next(s for s in SETTINGS if s.name == "cache_capacity")


def add_tuning_flags(group, number):
    """Adds the flags to an argparse group; ``number`` parses a numeric flag's value."""
    for setting in TUNED_SETTINGS:
        if setting.flag_unit == SWITCH:
            group.add_argument(setting.flag, dest=_dest(setting), action="store_const", const=1,
                               help=f"{setting.name}=1: {setting.meaning}")
            group.add_argument(negated_flag(setting), dest=_dest(setting), action="store_const",
                               const=0, help=f"{setting.name}=0")
            continue
        if setting.type is bool:  # a switch: given, it turns the setting on
            group.add_argument(setting.flag, action="store_true", default=None, help=setting.meaning)
            continue
        unit = f" (the flag takes {setting.flag_unit})" if setting.flag_unit in FLAG_UNIT_FACTORS else ""
        group.add_argument(setting.flag, type=str if setting.type is str else number,
                           help=setting.meaning + unit)
    group.add_argument("--disable-cache", action="store_true",
                       help=f"the same as {_CACHE_CAPACITY.flag} 0 (horovodrun's flag)")


def _dest(setting):
    return setting.flag.lstrip("-").replace("-", "_")  # argparse's name for the flag's value


def _text(setting, value):
    """The variable's text: converted to the setting's unit; 5.0 -> "5", since int settings
    are read as integers."""
    if setting.type is str:
        return value
    if setting.type is bool:
        return "1" if value else "0"
    value *= FLAG_UNIT_FACTORS.get(setting.flag_unit, 1)
    return str(int(round(value))) if setting.type is int or float(value).is_integer() else str(value)


def tuning_environment(args):
    """{variable: value} for the tuning flags given on the command line, in table order."""
    env = {}
    for setting in TUNED_SETTINGS:
        value = getattr(args, _dest(setting), None)
        if value is not None:
            env["MPIREP_" + setting.environment] = _text(setting, value)
    if args.disable_cache:
        env["MPIREP_" + _CACHE_CAPACITY.environment] = "0"
    return env
