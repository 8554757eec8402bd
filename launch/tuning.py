"""Tuning flags of mpirep-run, turned into the MPIREP_* variables every rank's core reads."""

MIB = 1024 * 1024


def _fusion_bytes(mb):
    return str(int(round(mb * MIB)))


def _number(value):
    """0.5 -> "0.5", 5.0 -> "5": the core parses integers where it expects them."""
    return str(int(value)) if float(value).is_integer() else str(value)


# (argparse dest, environment variable, conversion)
TUNING_FLAGS = (
    ("fusion_threshold_mb", "MPIREP_FUSION_THRESHOLD", _fusion_bytes),
    ("cycle_time_ms", "MPIREP_CYCLE_TIME", _number),
    ("stall_check_warning_time_seconds", "MPIREP_STALL_CHECK_TIME_SECONDS", _number),
    ("timeline_filename", "MPIREP_TIMELINE", str),
)


def tuning_environment(args):
    """{variable: value} for the tuning flags given on the command line, in a fixed order."""
    env = {}
    for dest, variable, convert in TUNING_FLAGS:
        value = getattr(args, dest, None)
        if value is not None:
            env[variable] = convert(value)
    return env
