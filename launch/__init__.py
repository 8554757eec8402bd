"""mpirep's launcher, `mpirep-run` (also `python -m mpirep.launch`).

Pure Python: it imports neither TensorFlow nor mpirep's native core, so it works on a login
node that has neither.  It only builds an mpirun or srun command line and supervises it.
"""
from .cli import main

__all__ = ["main"]
