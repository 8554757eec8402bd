"""The Keras 2 APIs that Horovod scripts use, rewritten for Keras 3 where the rewrite is
mechanical and means the same; flagged, with a suggested fix, where it is not."""
import ast

from mpirep.port.edits import Edit, Flag, dotted_name

OPTIMIZER_CLASSES = {"SGD", "Adam", "AdamW", "Adamax", "Adadelta", "Adagrad", "Adafactor", "Nadam",
                     "RMSprop", "Ftrl", "Lion"}
# fit's arguments for Keras 2's data loading workers; Keras 3 takes them on keras.utils.PyDataset
WORKER_ARGUMENTS = ("workers", "use_multiprocessing", "max_queue_size")
TRAINING_METHODS = {"fit", "evaluate", "predict", "fit_generator", "evaluate_generator",
                    "predict_generator"}
GENERATOR_METHODS = {"fit_generator": "fit", "evaluate_generator": "evaluate",
                     "predict_generator": "predict"}
# mixed_precision.experimental's names that changed when the API left experimental
MIXED_PRECISION = {"set_policy": "set_global_policy"}
# Keras 2 file formats: ModelCheckpoint writes what save_weights_only asks for; Keras 3 tells the
# two apart by the file's ending
WEIGHTS_SUFFIX, MODEL_SUFFIX = ".weights.h5", ".keras"
TF1_OPTIMIZER_PREFIXES = ("tf.compat.v1.train.", "tf.train.")
TF1_NAMES = {"tf.Session", "tf.ConfigProto", "tf.placeholder", "tf.global_variables_initializer"}


def rewrite(tree, source):
    """(edits, flags) for the whole script."""
    edits, flags, paths_seen = [], [], set()
    tf1_optimizers = _uses_tf1_optimizers(tree)
    optimizer_names = _names_bound_to_optimizers(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            _call(node, source, edits, flags, tf1_optimizers, paths_seen)
        elif isinstance(node, ast.Attribute):
            _attribute(node, source, edits, optimizer_names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            _import_from(node, source, edits)
        elif isinstance(node, ast.FunctionDef) and node.name in ("get_updates", "_resource_apply_dense",
                                                                 "_resource_apply_sparse", "_create_slots"):
            flags.append(Flag(node.lineno, f"defines {node.name}, a method of Keras 2's optimizer "
                              "base class that Keras 3 never calls",
                              "port the optimizer to Keras 3's build() and update_step() "
                              "(keras.io/guides/migrating_to_keras_3)"))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node not in paths_seen:
            _h5_elsewhere(node, flags)
    return edits, _unique(flags)


def _unique(flags):
    seen, result = set(), []
    for flag in flags:
        if (flag.line, flag.reason) not in seen:
            seen.add((flag.line, flag.reason))
            result.append(flag)
    return result


def _uses_tf1_optimizers(tree):
    """TF1's optimizers have a variables() method, as Keras 2's do; Keras 3's is a property."""
    names = (dotted_name(node) or "" for node in ast.walk(tree) if isinstance(node, ast.Attribute))
    return any(name.startswith(TF1_OPTIMIZER_PREFIXES) and name.endswith("Optimizer")
               for name in names)


def is_optimizer_constructor(func):
    """``tf.keras.optimizers.X``, ``tf.optimizers.X``, ``optimizers.legacy.X``, ``Adam``; not
    ``optimizers.schedules.X``."""
    parts = (dotted_name(func) or "").split(".")
    return parts[-2:-1] in (["optimizers"], ["legacy"]) or parts[-1] in OPTIMIZER_CLASSES


def _names_bound_to_optimizers(tree):
    """Names assigned a Keras optimizer, or a DistributedOptimizer around one: ``opt``."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
            func_name = dotted_name(node.value.func) or ""
            if is_optimizer_constructor(node.value.func) or func_name.endswith("DistributedOptimizer"):
                names.update(t.id for t in node.targets if isinstance(t, ast.Name))
    return names


def _call(node, source, edits, flags, tf1_optimizers, paths_seen):
    func = node.func
    method = func.attr if isinstance(func, ast.Attribute) else None
    for keyword in node.keywords:
        if keyword.arg == "experimental_run_tf_function":
            edits.append(source.remove_keyword(node, keyword, "removed compile's "
                         "experimental_run_tf_function (Keras 3 always runs the optimizer's "
                         "apply_gradients, which DistributedOptimizer overrides)"))
        elif method in TRAINING_METHODS and keyword.arg in WORKER_ARGUMENTS:
            edits.append(source.remove_keyword(node, keyword, f"removed {method}'s {keyword.arg} "
                         "(Keras 3 takes it on a keras.utils.PyDataset, not on fit)"))
    if is_optimizer_constructor(func):
        _optimizer_arguments(node, source, edits, flags)
    if method == "variables" and not node.args and not node.keywords:
        if tf1_optimizers:
            flags.append(Flag(node.lineno, "calls .variables(): a method on TF1's optimizers "
                              "this script uses, a property on Keras optimizers",
                              "write .variables (no call) where the object is a Keras optimizer"))
        else:
            edits.append(Edit(source.end(func), source.end(node), "", node.lineno,
                              ".variables() -> .variables (a property in Keras 3)"))
    if method in GENERATOR_METHODS:
        edits.append(_rename_attribute(source, func, GENERATOR_METHODS[method],
                                       f"{method} -> {GENERATOR_METHODS[method]} (Keras 3 "
                                       "has only the latter; it takes generators too)"))
    name = dotted_name(func) or ""
    if _is_backend_function(name, "set_value") and len(node.args) == 2 and not node.keywords:
        # "f(x, v)" -> "x.assign(v)" in two edits around x and v, which keep their own
        variable, value = node.args
        bare = isinstance(variable, (ast.Name, ast.Attribute, ast.Subscript, ast.Call))
        what = f"{name}(x, v) -> x.assign(v) (Keras 3's set_value fails on its own variables)"
        edits.append(Edit(source.start(node), source.start(variable), "" if bare else "(",
                          node.lineno, what))
        edits.append(Edit(source.end(variable), source.start(value),
                          ".assign(" if bare else ").assign(", node.lineno, what))
    elif _is_backend_function(name, "get_value"):
        flags.append(Flag(node.lineno, f"{name}() returns a Keras 3 variable itself, not its "
                          "value", "x.numpy() for a variable or tensor, or float(x)"))
    if name.endswith("ModelCheckpoint"):
        _checkpoint_path(node, source, edits, flags, _saves_weights_only(node), paths_seen)
    elif method == "save_weights":
        _checkpoint_path(node, source, edits, flags, True, paths_seen)
    elif name.endswith("ImageDataGenerator"):
        flags.append(Flag(node.lineno, "ImageDataGenerator is not in Keras 3",
                          "load images with keras.utils.image_dataset_from_directory or tf.data, "
                          "augment with keras.layers.RandomFlip/RandomRotation/..."))
    elif _is_backend_function(name, "get_session") or _is_backend_function(name, "set_session"):
        flags.append(Flag(node.lineno, f"{name}() is TF1 Keras; Keras 3 has no session",
                          "run eagerly or in tf.function; drop the session"))
    elif name in TF1_NAMES:
        flags.append(Flag(node.lineno, f"{name} is TensorFlow 1's, gone from TensorFlow 2",
                          "run tf_upgrade_v2 on the script first (it writes tf.compat.v1), "
                          "then mpirep-port"))


def _is_backend_function(name, function):
    """``tf.keras.backend.f``, ``keras.backend.f``, ``K.f`` (Keras's backend by its usual alias)."""
    parts = name.split(".")
    return len(parts) >= 2 and parts[-1] == function and parts[-2] in ("backend", "K")


def _optimizer_arguments(node, source, edits, flags):
    for keyword in node.keywords:
        if keyword.arg == "lr":
            edits.append(Edit(source.start(keyword), source.start(keyword) + 2, "learning_rate",
                              keyword.lineno, "lr= -> learning_rate= (Keras 3 has no lr)"))
        elif keyword.arg == "decay":
            flags.append(Flag(keyword.lineno, "the optimizer's decay= is gone in Keras 3",
                              "pass learning_rate=keras.optimizers.schedules.InverseTimeDecay("
                              "initial_lr, decay_steps=1, decay_rate=decay)"))


def _attribute(node, source, edits, optimizer_names):
    chain = dotted_name(node) or ""
    parts = chain.split(".")
    if node.attr == "legacy" and len(parts) >= 2 and parts[-2] == "optimizers":
        # "tf.keras.optimizers.legacy" -> "tf.keras.optimizers"
        edits.append(Edit(source.end(node.value), source.end(node), "", node.lineno,
                          "optimizers.legacy -> optimizers (Keras 3 has no legacy optimizers; "
                          "mpirep wraps the new ones)"))
    elif node.attr == "experimental" and parts[-2:-1] == ["mixed_precision"]:
        edits.append(Edit(source.end(node.value), source.end(node), "", node.lineno,
                          "mixed_precision.experimental -> mixed_precision"))
    elif (isinstance(node.value, ast.Attribute) and node.value.attr == "experimental"
          and (dotted_name(node.value) or "").endswith("mixed_precision.experimental")
          and node.attr in MIXED_PRECISION):
        edits.append(_rename_attribute(source, node, MIXED_PRECISION[node.attr],
                                       f"mixed_precision.experimental.{node.attr} -> "
                                       f"mixed_precision.{MIXED_PRECISION[node.attr]}"))
    elif node.attr == "lr" and _is_optimizer_value(node.value, optimizer_names):
        edits.append(_rename_attribute(source, node, "learning_rate",
                                       ".lr -> .learning_rate (Keras 3 optimizers have no lr)"))


def _is_optimizer_value(value, optimizer_names):
    if isinstance(value, ast.Attribute):
        return value.attr == "optimizer"
    return isinstance(value, ast.Name) and value.id in optimizer_names


def _rename_attribute(source, node, new, what):
    """``x.old`` -> ``x.new``: only the attribute's name, whatever space is around the dot."""
    end = source.end(node)
    return Edit(end - len(node.attr), end, new, node.end_lineno, what)


def _import_from(node, source, edits):
    parts = node.module.split(".")
    if parts[-2:] == ["optimizers", "legacy"]:
        start = source.start(node) + source.segment(node).index(node.module) + len(node.module)
        edits.append(Edit(start - len(".legacy"), start, "", node.lineno,
                          "from ...optimizers.legacy -> from ...optimizers"))


def _saves_weights_only(call):
    for keyword in call.keywords:
        if keyword.arg == "save_weights_only":
            value = keyword.value
            return value.value if isinstance(value, ast.Constant) else None
    return False


def _path_argument(call):
    for keyword in call.keywords:
        if keyword.arg == "filepath":
            return keyword.value
    return call.args[0] if call.args else None


def _path_literal(node):
    """The string literal that ends a path expression: the path itself,
    ``os.path.join(dir, "name.h5")``, ``dir + "/name.h5"``, ``"name-{}.h5".format(epoch)``."""
    if isinstance(node, ast.Call) and node.args and (dotted_name(node.func) or "").endswith("join"):
        return _path_literal(node.args[-1])
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "format":
        return _path_literal(node.func.value)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _path_literal(node.right)
    return node


def _checkpoint_path(call, source, edits, flags, weights_only, paths_seen):
    path = _path_literal(_path_argument(call))
    paths_seen.add(path)
    suffix = WEIGHTS_SUFFIX if weights_only else MODEL_SUFFIX
    if isinstance(path, ast.Constant) and isinstance(path.value, str):
        text = path.value
        if text.endswith(".h5") and not text.endswith(WEIGHTS_SUFFIX) and weights_only is not None:
            literal = source.segment(path)
            quote_end = len(literal) - len(literal.rstrip("'\""))
            old_end = source.end(path) - quote_end
            edits.append(Edit(old_end - len(".h5"), old_end, suffix, path.lineno,
                              f"checkpoint path .h5 -> {suffix} (Keras 3 names the format "
                              "by the file's ending)"))
            return
    if weights_only is None or not _is_literal(path):
        flags.append(Flag(call.lineno, "a checkpoint path mpirep-port cannot see: in Keras 3 it "
                          f"must end in {WEIGHTS_SUFFIX} (weights only) or {MODEL_SUFFIX} "
                          "(the whole model)",
                          f"make the path end in {suffix}"))


def _is_literal(node):
    return isinstance(node, ast.Constant) and isinstance(node.value, str)


def _h5_elsewhere(node, flags):
    """A path ending .h5 that no checkpointing call receives: a variable, an argparse default."""
    if node.value.endswith(".h5") and not node.value.endswith(WEIGHTS_SUFFIX):
        flags.append(Flag(node.lineno, f"the path {node.value!r} ends in .h5: if Keras 3 writes "
                          "or reads it as a checkpoint, it must end in .weights.h5 (weights only) "
                          "or .keras (the whole model)",
                          "change the ending where the path is defined"))
