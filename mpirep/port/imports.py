"""Horovod's imports and the module names they bind, turned into mpirep's."""
import ast
from pathlib import Path

from mpirep.port.edits import Edit, Flag

PACKAGE_DIR = Path(__file__).resolve().parents[1]   # mpirep/
# Horovod modules whose work mpirep does elsewhere, or not at all: (reason, suggested fix)
NO_COUNTERPART = {
    "horovod.runner": ("horovod.runner (horovodrun's internals) has no mpirep counterpart",
                       "start jobs with mpirep-run, or from Python with mpirep.run(fn, np=...)"),
    "horovod.torch": ("mpirep is for TensorFlow; it has no PyTorch API", "keep Horovod for PyTorch"),
    "horovod.mxnet": ("mpirep is for TensorFlow; it has no MXNet API", "keep Horovod for MXNet"),
    "horovod.spark": ("mpirep has no Spark integration", "start the job with mpirep-run or Slurm"),
    "horovod.ray": ("mpirep has no Ray integration", "start the job with mpirep-run or Slurm"),
    "horovod.tensorflow.data": ("mpirep has no tf.data service dispatcher",
                                "shard the dataset per rank with dataset.shard(hvd.size(), hvd.rank())"),
}


def is_horovod(module):
    return module == "horovod" or module.startswith("horovod.")


def is_mpirep(module):
    return module == "mpirep" or module.startswith("mpirep.")


def mpirep_module(module):
    return "mpirep" + module[len("horovod"):]


def _exists(module):
    """Whether mpirep has the module, looked up in its sources without importing them."""
    path = PACKAGE_DIR.parent.joinpath(*module.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def _missing(module, line):
    """A Flag if Horovod's ``module`` has no mpirep counterpart, else None."""
    for prefix, (reason, fix) in NO_COUNTERPART.items():
        if module == prefix or module.startswith(prefix + "."):
            return Flag(line, f"imports {module}: {reason}", fix)
    if not _exists(mpirep_module(module)):
        return Flag(line, f"imports {module}, which mpirep does not have as "
                          f"{mpirep_module(module)}", "import the names from mpirep.tensorflow "
                          "or mpirep.tensorflow.keras instead (docs/tensorflow.md)")
    return None


def rewrite(tree, source):
    """(edits, flags, imports_horovod, imports_mpirep) for the script's imports, and for the
    uses of names a bare ``import horovod...`` binds."""
    edits, flags, bare_bindings = [], [], False
    imports_horovod = imports_mpirep = False
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                imports_mpirep |= is_mpirep(alias.name)
                if not is_horovod(alias.name):
                    continue
                imports_horovod = True
                flag = _missing(alias.name, node.lineno)
                if flag:
                    flags.append(flag)
                    continue
                bare_bindings |= alias.asname is None
                edits.append(_rename_alias(source, node, alias))
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            imports_mpirep |= is_mpirep(node.module)
            if not is_horovod(node.module):
                continue
            imports_horovod = True
            flag = _missing(node.module, node.lineno)
            if flag:
                flags.append(flag)
                continue
            edits.append(_rename_from(source, node))
    if bare_bindings:
        edits += _rename_uses(tree, source)
    return edits, flags, imports_horovod, imports_mpirep


def _rename_alias(source, node, alias):
    """``import horovod.x [as y]``: the module's name in the statement."""
    segment = source.segment(node)
    position = source.start(node) + _find_name(segment, alias.name)
    new = mpirep_module(alias.name)
    return Edit(position, position + len(alias.name), new, node.lineno,
                f"import {alias.name} -> import {new}")


def _rename_from(source, node):
    segment = source.segment(node)
    position = source.start(node) + _find_name(segment, node.module)
    new = mpirep_module(node.module)
    return Edit(position, position + len(node.module), new, node.lineno,
                f"from {node.module} import -> from {new} import")


def _find_name(segment, dotted):
    """Where ``dotted`` stands in an import statement's text as a whole name (Python allows
    no comment between ``import`` and the module's first name part)."""
    position = 0
    while True:
        position = segment.index(dotted, position)
        after = segment[position + len(dotted):position + len(dotted) + 1]
        before = segment[position - 1:position] if position else " "
        if not (after and (after.isalnum() or after in "._")) and not (before.isalnum() or before in "._"):
            return position
        position += 1


def _rename_uses(tree, source):
    """``horovod.run(...)``, ``horovod.tensorflow.keras.init()``: the name ``horovod`` that a
    bare import bound, wherever the script reads it."""
    edits = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id == "horovod" and isinstance(node.ctx, ast.Load):
            edits.append(source.replace(node, "mpirep", "horovod. -> mpirep."))
    return edits

