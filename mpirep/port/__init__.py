"""mpirep-port: turns a Horovod TensorFlow script into an mpirep one.

Every Horovod import becomes mpirep's; for Keras 3 the Keras 2 APIs that Horovod scripts use
are rewritten where that is mechanical and safe, and flagged with a suggested fix where it is
not. Edits are made on the exact source text at positions ``ast`` finds, so comments and
layout survive; porting a ported script changes nothing. docs/porting.md lists every rewrite.
"""
import ast
from dataclasses import dataclass

from mpirep.port import imports, keras2, keras3
from mpirep.port.edits import Source, apply


class PortError(ValueError):
    """The file is not one mpirep-port can port; the message says why."""


@dataclass(frozen=True)
class Ported:
    text: str        # the ported script
    changes: list    # [Edit], in source order
    flags: list      # [Flag]: what to check by hand, in source order


def port_source(text, keras2_only=False, name="<script>"):
    """The script ``text`` ported to mpirep: for Keras 3, or with ``keras2_only`` only its
    imports, to run on tf_keras. Raises PortError for text that is not a Horovod (or already
    ported mpirep) script."""
    try:
        tree = ast.parse(text, filename=name)
    except SyntaxError as err:
        raise PortError(f"{name} is not Python that this interpreter parses "
                        f"(line {err.lineno}: {err.msg})") from None
    source = Source(text)
    edits, flags, horovod, mpirep = imports.rewrite(tree, source)
    if not horovod and not mpirep:
        raise PortError(f"{name} imports no Horovod module (horovod, horovod.tensorflow, "
                        "horovod.tensorflow.keras, horovod.keras): nothing to port")
    more_edits, more_flags = (keras2.rewrite if keras2_only else keras3.rewrite)(tree, source)
    edits, flags = edits + more_edits, flags + more_flags
    edits.sort(key=lambda e: (e.start, e.end))
    flags.sort(key=lambda f: f.line)
    return Ported(apply(text, edits), edits, flags)
