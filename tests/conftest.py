"""Keep the parallel suite out of plain `pytest tests` runs.

tests/parallel is meant to run on every rank of an mpirun job; tests/multiproc starts those jobs
(at 1..4 ranks). Collected into the driver's own process, it would initialise MPI there and run
the suite a second time as a singleton. Name tests/parallel (or a file in it) explicitly to run it
directly, e.g. `mpirun -np 2 python -m pytest tests/parallel`.
"""
from pathlib import Path

PARALLEL_DIR = Path(__file__).parent / "parallel"


def _names_parallel(arg, invocation_dir):
    path = (invocation_dir / arg.split("::")[0]).resolve()
    return path == PARALLEL_DIR or PARALLEL_DIR in path.parents


def pytest_ignore_collect(collection_path, config):
    if collection_path != PARALLEL_DIR:
        return None
    invocation_dir = config.invocation_params.dir
    if any(_names_parallel(arg, invocation_dir) for arg in config.args):
        return None
    return True
