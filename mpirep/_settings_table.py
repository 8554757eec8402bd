"""The settings table, native/core/settings.def, read as text: the one definition of mpirep's
settings, which the C++ core is compiled from too.

Imports nothing of mpirep's native core or of TensorFlow, so that the launcher can use it. Each
line of the table is a call, MPIREP_SETTING(name, type, ...), that also parses as Python."""

import ast
from typing import NamedTuple

from mpirep._source_tree import native_dir

TABLE = "core/settings.def"
_TYPES = {"int": int, "float": float, "str": str, "bool": bool}
#: mpirep-run flag units that differ from the setting's own unit, and the factor between them.
FLAG_UNIT_FACTORS = {"MiB": 1 << 20}
#: The flag unit of an on/off setting: its flag takes no value and sets 1, its --no- form 0.
SWITCH = "switch"


def negated_flag(setting):
    """The --no- form of a switch's flag."""
    return "--no-" + setting.flag[2:]


class Setting(NamedTuple):
    name: str
    type: type          # int, float, str or bool
    default: object     # of that type (the table writes a bool's as 0 or 1)
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
        default, *rest = (ast.literal_eval(a) for a in call.args[2:])
        settings.append(Setting(name, _TYPES[type_name], _TYPES[type_name](default), *rest))
    return tuple(settings)


def table_path():
    return native_dir(TABLE) / TABLE


SETTINGS = parse(table_path().read_text())
