"""Runs the scripts named on the command line one after another in this rank, each as its own
__main__ with the directory given first as its argument: one mpirun for several scripts."""
import runpy
import sys
from pathlib import Path

out, scripts = sys.argv[1], sys.argv[2:]
for script in scripts:
    sys.argv = [script, out]
    sys.path.insert(0, str(Path(script).parent))
    runpy.run_path(script, run_name="__main__")
