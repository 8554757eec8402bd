"""Which environment variables reach the ranks, and how `-x` is understood."""
import re

from .errors import LaunchError

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

# Describe the launching shell or machine, not the job: wrong on another host.
_HOST_SPECIFIC = {"HOSTNAME", "HOST", "PWD", "OLDPWD", "SHLVL", "_", "DISPLAY", "XAUTHORITY",
                  "SSH_CLIENT", "SSH_CONNECTION", "SSH_TTY", "SSH_AUTH_SOCK", "TMUX", "TMUX_PANE"}
# Read by the MPI launchers themselves, which pass on what their ranks need.
_LAUNCHER_PREFIXES = ("OMPI_", "PMIX_", "PMI_", "SLURM_", "HYDRA_", "I_MPI_", "BASH_FUNC_")


class EnvError(LaunchError):
    pass


def is_forwardable(name):
    return (bool(_NAME.match(name)) and name not in _HOST_SPECIFIC
            and not name.startswith(_LAUNCHER_PREFIXES))


def parse_exports(items, environ):
    """`-x NAME` (value taken from here) and `-x NAME=VALUE`, in order, into {NAME: VALUE}."""
    exports = {}
    for item in items:
        name, has_value, value = item.partition("=")
        if not _NAME.match(name):
            raise EnvError(f"-x {item!r}: not a variable name")
        if not has_value:
            if name not in environ:
                raise EnvError(f"-x {name}: {name} is not set in this environment; "
                               f"use -x {name}=VALUE")
            value = environ[name]
        exports[name] = value
    return exports


def forwardable_names(environ):
    return sorted(name for name in environ if is_forwardable(name))
