"""A source checkout without its built core, imported instead of the installed mpirep (running
from inside the checkout after `pip install .`): the ImportError says what happened and what to
do, and `mpirep-run --check-build` says the same."""
import shutil
import subprocess
import sys
from pathlib import Path

import mpi4py
import numpy
import pytest

import mpirep
from mpijob import REPO, job_env
from mpirep import _missing_core
from mpirep.launch import check_build

PACKAGE = Path(mpirep.__file__).resolve().parent


def make_checkout(root):
    """A source tree: setup.py, native/, and mpirep/ without the built core."""
    shutil.copytree(REPO / "native", root / "native")
    (root / "setup.py").write_text("")
    shutil.copytree(PACKAGE, root / "mpirep",
                    ignore=shutil.ignore_patterns("_core.*", "_mpi_library.py", "__pycache__"))
    return root


def install(site):
    """A copy of this mpirep, core included, as a non-editable install puts it in site-packages."""
    shutil.copytree(PACKAGE, site / "mpirep", ignore=shutil.ignore_patterns("__pycache__"))
    return site


def test_a_checkout_shadowing_the_installed_mpirep(tmp_path, monkeypatch):
    checkout = make_checkout(tmp_path / "src")
    site = install(tmp_path / "site")
    monkeypatch.chdir(checkout)
    message = _missing_core.explain(checkout / "mpirep", ["", str(site)])
    assert message == (
        f"mpirep was imported from the source checkout {checkout}, in which its native core "
        f"(mpirep._core) is not built. An installed mpirep, with its core, is at "
        f"{site / 'mpirep'}, but Python finds the checkout first, because it is the current "
        "directory. Run from another directory, or build the core into the checkout: "
        "`pip install -e .` there (or `dev/setup`, which also makes a .venv).")
    other = _missing_core.explain(checkout / "mpirep", [str(checkout), str(site)])
    assert "finds the checkout first, because it is the current directory" in other
    monkeypatch.chdir(tmp_path)
    assert f"first, because {checkout} is on sys.path (from PYTHONPATH or the script's " \
           "directory)" in _missing_core.explain(checkout / "mpirep", [str(checkout), str(site)])


def test_a_checkout_with_no_core_anywhere(tmp_path):
    checkout = make_checkout(tmp_path / "src")
    assert _missing_core.explain(checkout / "mpirep", [str(checkout)]) == (
        f"mpirep was imported from the source checkout {checkout}, in which its native core "
        "(mpirep._core) is not built. No installed mpirep was found either. Build it: "
        f"`pip install -e .` in {checkout} (or `dev/setup` there, which also makes a .venv).")


def test_an_installation_without_its_core(tmp_path):
    broken = tmp_path / "site" / "mpirep"
    broken.mkdir(parents=True)
    assert _missing_core.explain(broken, [str(tmp_path / "site")]) == (
        f"mpirep at {broken} has no native core (mpirep._core): the installation is incomplete. "
        "Reinstall mpirep.")


@pytest.fixture
def shadowed(tmp_path):
    """(checkout, environment) where the checkout's mpirep shadows an installed one: run from
    inside the checkout, with the installed copy and mpirep's dependencies on the path and no
    site-packages (python -S: this venv's editable mpirep stays out)."""
    checkout = make_checkout(tmp_path / "src")
    site = install(tmp_path / "site")
    dependencies = {str(Path(module.__file__).resolve().parents[1]) for module in (numpy, mpi4py)}
    env = job_env()
    env["PYTHONPATH"] = ":".join([str(site), *sorted(dependencies)])
    return checkout, site, env


def test_init_from_inside_the_checkout_says_why(shadowed):
    checkout, site, env = shadowed
    done = subprocess.run([sys.executable, "-S", "-c", "import mpirep; mpirep.init()"],
                          cwd=checkout, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode != 0
    assert done.stderr.rstrip().endswith(
        f"ImportError: mpirep was imported from the source checkout {checkout}, in which its "
        f"native core (mpirep._core) is not built. An installed mpirep, with its core, is at "
        f"{site / 'mpirep'}, but Python finds the checkout first, because it is the current "
        "directory. Run from another directory, or build the core into the checkout: "
        "`pip install -e .` there (or `dev/setup`, which also makes a .venv)."), done.stderr


def test_check_build_from_inside_the_checkout_says_the_same(shadowed, monkeypatch):
    checkout, site, env = shadowed
    monkeypatch.chdir(checkout)
    ok, detail = check_build.probe_core(sys.executable, ["-S"], env)
    assert not ok
    assert detail == "ImportError: " + _missing_core.explain(checkout / "mpirep", ["", str(site)])
