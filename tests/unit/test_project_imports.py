"""Every import of one of the project's own modules names a module and a name that exist, including
the imports made inside functions, which only run on paths a test may never take (a rename once
left the elastic lifeline importing a module that no longer existed).  Read from the sources
without importing them."""
import ast

import pytest

from mpijob import REPO

TOPS = ("mpirep", "launch")
SCANNED = TOPS + ("benchmarks", "examples", "buildtools")


def _module_file(dotted):
    """The source of a module or package, the path of an extension module, or None."""
    path = REPO.joinpath(*dotted.split("."))
    for candidate in (path.with_suffix(".py"), path / "__init__.py"):
        if candidate.is_file():
            return candidate
    extensions = sorted(path.parent.glob(path.name + ".*.so")) if path.parent.is_dir() else []
    return extensions[0] if extensions else None


def _module_level_nodes(body):
    """The statements that run at import time, through if/try/with blocks."""
    for node in body:
        yield node
        for field in ("body", "orelse", "finalbody", "handlers"):
            inner = getattr(node, field, None)
            if isinstance(inner, list) and not isinstance(
                    node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                yield from _module_level_nodes(inner)


def _bound_names(source_file):
    """The names a module binds at import time, or None if it binds names dynamically."""
    names = set()
    for node in _module_level_nodes(ast.parse(source_file.read_text()).body):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            if any(alias.name == "*" for alias in node.names):
                return None
            names |= {(alias.asname or alias.name).split(".")[0] for alias in node.names}
    return None if "__getattr__" in names else names


def _absolute(node, importer):
    if not node.level:
        return node.module
    package = importer.parent.relative_to(REPO).parts
    base = package[:len(package) - (node.level - 1)]
    return ".".join(base + ((node.module,) if node.module else ()))


def _broken_imports(source_file):
    for node in ast.walk(ast.parse(source_file.read_text())):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] in TOPS and _module_file(alias.name) is None:
                    yield node.lineno, f"no module {alias.name}"
        elif isinstance(node, ast.ImportFrom):
            module = _absolute(node, source_file)
            if not module or module.split(".")[0] not in TOPS:
                continue
            target = _module_file(module)
            if target is None:
                yield node.lineno, f"no module {module}"
                continue
            bound = _bound_names(target) if target.suffix == ".py" else None
            for alias in node.names:
                if alias.name != "*" and bound is not None and alias.name not in bound \
                        and _module_file(f"{module}.{alias.name}") is None:
                    yield node.lineno, f"{module} has no {alias.name}"


def _project_sources():
    for top in SCANNED:
        yield from sorted(p for p in (REPO / top).rglob("*.py") if "_native_copy" not in p.parts)


def test_the_checker_sees_a_broken_import(tmp_path):
    fake = tmp_path / "fake.py"
    fake.write_text("def f():\n    from mpirep._no_such_module import core\n"
                    "    from mpirep.errors import NoSuchError\n")
    assert [line for line, _ in _broken_imports(fake)] == [2, 3]


@pytest.mark.parametrize("top", SCANNED)
def test_every_project_import_resolves(top):
    broken = [f"{path.relative_to(REPO)}:{line}: {what}"
              for path in _project_sources() if path.relative_to(REPO).parts[0] == top
              for line, what in _broken_imports(path)]
    assert not broken, "imports of project modules that do not resolve:\n" + "\n".join(broken)
