"""No name that a package of mpirep (or of its launcher) defines hides one of its modules, as a
function ``mpirep.config`` once hid the module ``mpirep/config.py``: read from the packages'
``__init__.py`` files, without importing them."""
import ast

from mpijob import REPO


def _modules(package_dir):
    return {p.stem for p in package_dir.glob("*.py") if p.stem != "__init__"} | \
        {p.parent.name for p in package_dir.glob("*/__init__.py")}


def _bound_names(init_file, package):
    """(name, line) of every top-level name the file binds to something other than the package's
    module of that name."""
    for node in ast.parse(init_file.read_text()).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            yield node.name, node.lineno
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                for name in ast.walk(target):
                    if isinstance(name, ast.Name):
                        yield name.id, node.lineno
        elif isinstance(node, ast.ImportFrom):
            source = "." * node.level + (node.module or "")
            for alias in node.names:
                imports_the_module = source in (package, ".") and alias.asname in (None, alias.name)
                if not imports_the_module:
                    yield alias.asname or alias.name, node.lineno


def test_no_name_hides_a_module():
    hidden = []
    for top in ("mpirep", "launch"):
        for init_file in sorted((REPO / top).rglob("__init__.py")):
            package_dir = init_file.parent
            package = ".".join(package_dir.relative_to(REPO).parts)
            modules = _modules(package_dir)
            hidden += [f"{init_file.relative_to(REPO)}:{line}: {name}"
                       for name, line in _bound_names(init_file, package) if name in modules]
    assert not hidden, "names that hide a module of their package:\n" + "\n".join(hidden)
