"""The settings table, native/core/settings.def, read as text: the one definition of mpirep's
settings, which the C++ core is compiled from too.

Imports nothing of mpirep's native core or of TensorFlow, so that the launcher can use it. Each
line of the table is a call, MPIREP_SETTING(name, type, ...), that also parses as Python."""

import ast
from typing import NamedTuple

from mpirep._native_sources import native_dir

TABLE = "core/settings.def"
_TYPES = {"int": int, "float": float, "str": str}
#: mpirep-run flag units that differ from the setting's own unit, and the factor between them.
FLAG_UNIT_FACTORS = {"MiB": 1 << 20}
#: The flag unit of a flag that takes no value and sets the setting to 1.
SWITCH = "switch"


class Setting(NamedTuple):
    name: str
    type: type          # int, float or str
    default: object
    minimum: float      # numbers only
    environment: str    # read from MPIREP_<environment>
    horovod_variable: str  # read next; "" if Horovod has none
    flag: str           # the mpirep-run flag; "" if none
    flag_unit: str
    meaning: str


def parse(text):
    """The settings of a table's text, in table order."""
    code = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("//"))
    settings = []
    for statement in ast.parse(code).body:
        call = statement.value
        if not (isinstance(call, ast.Call) and call.func.id == "MPIREP_SETTING"):
            raise ValueError(f"{TABLE}: not a MPIREP_SETTING line: {ast.unparse(statement)}")
        name, type_name = (arg.id for arg in call.args[:2])
        settings.append(Setting(name, _TYPES[type_name], *(ast.literal_eval(a) for a in call.args[2:])))
    return tuple(settings)


def table_path():
    return native_dir(TABLE) / TABLE


SETTINGS = parse(table_path().read_text())
