"""What to say when mpirep's native core, the extension ``mpirep._core``, is not there. The
usual cause: Python imported the mpirep of a source checkout in which the core was never built
(the current directory comes first on sys.path, so running from inside the checkout after
`pip install .` does this), while the installed mpirep, which has its core, sits elsewhere.
"""

import os
import sys
from importlib.machinery import EXTENSION_SUFFIXES
from pathlib import Path


def explain(package_dir, search_path=None):
    """The message for an mpirep package at ``package_dir`` that lacks its core; ``search_path``
    (default sys.path) is where Python looks for packages."""
    search_path = sys.path if search_path is None else search_path
    package_dir = Path(package_dir).resolve()
    checkout = package_dir.parent
    if not ((checkout / "setup.py").is_file() and (checkout / "native").is_dir()):
        return (f"mpirep at {package_dir} has no native core (mpirep._core): the installation is "
                "incomplete. Reinstall mpirep.")
    said = (f"mpirep was imported from the source checkout {checkout}, in which its native core "
            "(mpirep._core) is not built.")
    installed = [found for found in _packages_with_core(search_path) if found != package_dir]
    if installed:
        return (f"{said} An installed mpirep, with its core, is at {installed[0]}, but Python "
                f"finds the checkout first, {_why_first(checkout, search_path)}. Run from "
                "another directory, or build the core into the checkout: `pip install -e .` "
                "there (or `dev/setup`, which also makes a .venv).")
    return (f"{said} No installed mpirep was found either. Build it: `pip install -e .` in "
            f"{checkout} (or `dev/setup` there, which also makes a .venv).")


def _packages_with_core(search_path):
    for entry in search_path:
        package = Path(entry or os.curdir).resolve() / "mpirep"
        if any((package / f"_core{suffix}").is_file() for suffix in EXTENSION_SUFFIXES):
            yield package


def _why_first(checkout, search_path):
    for entry in search_path:
        if Path(entry or os.curdir).resolve() == checkout:
            if entry in ("", os.curdir) or checkout == Path.cwd().resolve():
                return "because it is the current directory"
            return f"because {entry} is on sys.path (from PYTHONPATH or the script's directory)"
    return "through sys.path"
