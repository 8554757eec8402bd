"""With ``--keras2`` the script keeps Keras 2's APIs and runs on tf_keras
(TF_USE_LEGACY_KERAS=1), which makes ``tf.keras`` tf_keras; a script that imports the
standalone ``keras`` would still get Keras 3 from it, so that import goes to tf_keras too."""
import ast

from mpirep.port.edits import Edit


def rewrite(tree, source):
    edits = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == "keras" or alias.name.startswith("keras."):
                    edits.append(_import_keras(source, node, alias))
        elif (isinstance(node, ast.ImportFrom) and node.level == 0 and node.module
              and (node.module == "keras" or node.module.startswith("keras."))):
            start = source.start(node) + source.segment(node).index("keras", len("from"))
            edits.append(Edit(start, start + len("keras"), "tf_keras", node.lineno,
                              f"from {node.module} import -> from tf_{node.module} import"))
    return edits, []


def _import_keras(source, node, alias):
    segment = source.segment(node)
    start = source.start(node) + segment.index(alias.name, len("import"))
    if alias.name == "keras" and alias.asname is None:
        return Edit(start, start + len("keras"), "tf_keras as keras", node.lineno,
                    "import keras -> import tf_keras as keras")
    return Edit(start, start + len("keras"), "tf_keras", node.lineno,
                f"import {alias.name} -> import tf_{alias.name}")
