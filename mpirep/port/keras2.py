"""With ``--keras2`` the script keeps Keras 2's APIs and runs on tf_keras
(TF_USE_LEGACY_KERAS=1), which makes ``tf.keras`` tf_keras; a script that imports the
standalone ``keras`` would still get Keras 3 from it, so that import goes to tf_keras too."""
import ast

from mpirep.port.edits import Edit, Flag, dotted_name
from mpirep.port.keras3 import is_optimizer_constructor


def rewrite(tree, source):
    edits, flags = [], []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _ignores_lr(node):
            flags.append(Flag(node.lineno, "tf_keras's optimizers outside .legacy ignore lr= "
                              "(with a warning) and train at their default learning rate",
                              "write learning_rate= (Keras 2 and 3 both take it)"))
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == "keras" or alias.name.startswith("keras."):
                    found = _import_keras(source, node, alias)
                    (flags if isinstance(found, Flag) else edits).append(found)
        elif (isinstance(node, ast.ImportFrom) and node.level == 0 and node.module
              and (node.module == "keras" or node.module.startswith("keras."))):
            start = source.start(node) + source.segment(node).index("keras", len("from"))
            edits.append(Edit(start, start + len("keras"), "tf_keras", node.lineno,
                              f"from {node.module} import -> from tf_{node.module} import"))
    return edits, flags


def _ignores_lr(call):
    return (is_optimizer_constructor(call.func) and "legacy" not in (dotted_name(call.func) or "")
            and any(keyword.arg == "lr" for keyword in call.keywords))


def _import_keras(source, node, alias):
    segment = source.segment(node)
    start = source.start(node) + segment.index(alias.name, len("import"))
    if alias.name == "keras" and alias.asname is None:
        return Edit(start, start + len("keras"), "tf_keras as keras", node.lineno,
                    "import keras -> import tf_keras as keras")
    if alias.asname is None:   # binds the name keras, which the script then reads
        return Flag(node.lineno, f"import {alias.name} gives Keras 3 even under "
                    "TF_USE_LEGACY_KERAS=1", f"import tf_keras as keras, then use {alias.name}")
    return Edit(start, start + len("keras"), "tf_keras", node.lineno,
                f"import {alias.name} -> import tf_{alias.name}")
