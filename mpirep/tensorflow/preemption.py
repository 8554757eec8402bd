"""``PreemptionCheckpointHandler``: a custom training loop that survives time limits and
preemption, over a ``tf.train.Checkpoint`` (docs/preemption.md)."""

import json
import os
import re

import mpirep
from mpirep.preemption import SignalWatcher, atomic_write, parse_signals, stop_job
from mpirep.tensorflow.functions import broadcast_object

LATEST_FILE = "latest.json"
_PREFIX = re.compile(r"^ckpt-(\d+)(\.|$)")


class PreemptionCheckpointHandler:
    """Runs the steps of a custom training loop (``run``), and on a signal of the
    ``preemption_signals`` setting saves ``checkpoint`` at the next step boundary every rank
    agrees on and ends the job: requeued under Slurm, else with
    ``mpirep.preemption.EXIT_STATUS`` (docs/preemption.md).

    Made on every rank alike, after every variable of ``checkpoint`` exists (build the model,
    and the optimizer with ``optimizer.build(variables)``): it restores the latest checkpoint of
    ``checkpoint_dir``, if any, with the ``total_run_calls`` it was saved at. Only rank 0
    writes; every rank reads the checkpoint that rank 0 names, so ``checkpoint_dir`` must be
    one directory that all ranks can read (a shared filesystem, as on Slurm clusters). A
    checkpoint is complete before ``latest.json``, replaced by a rename, names it."""

    def __init__(self, checkpoint, checkpoint_dir):
        self.checkpoint = checkpoint
        self.checkpoint_dir = os.fspath(checkpoint_dir)
        self._latest = os.path.join(self.checkpoint_dir, LATEST_FILE)
        latest = broadcast_object(self._read_latest() if mpirep.rank() == 0 else None, 0,
                                  name="mpirep.preemption.latest")
        self._total_run_calls = 0
        if latest:
            prefix = os.path.join(self.checkpoint_dir, latest["prefix"])
            checkpoint.read(prefix).assert_existing_objects_matched()
            self._total_run_calls = latest["total_run_calls"]
        self._watcher = SignalWatcher(parse_signals(mpirep.config().preemption_signals)).install()

    @property
    def total_run_calls(self):
        """Steps run so far by ``run``, those before the restored checkpoint included."""
        return self._total_run_calls

    def _read_latest(self):
        if not os.path.exists(self._latest):
            return None
        with open(self._latest) as file:
            return json.load(file)

    def run(self, step_fn, *args, **kwargs):
        """Runs one training step, ``step_fn(*args, **kwargs)``, and returns what it returns;
        then, if any rank has received a preemption signal, saves and ends the job. Every
        rank calls it for every step."""
        result = step_fn(*args, **kwargs)
        self._total_run_calls += 1
        if self._watcher.should_stop():
            self.save()
            stop_job(mpirep.rank(), f"step {self._total_run_calls} to {self.checkpoint_dir}",
                     "run the same job again: it restores the checkpoint and resumes")
        return result

    def save(self):
        """Saves the checkpoint, with ``total_run_calls``, as the one to restore; called on
        every rank, written by rank 0."""
        if mpirep.rank() != 0:
            return
        prefix = f"ckpt-{self._total_run_calls}"
        self.checkpoint.write(os.path.join(self.checkpoint_dir, prefix))
        with atomic_write(self._latest) as temporary, open(temporary, "w") as file:
            json.dump({"prefix": prefix, "total_run_calls": self._total_run_calls}, file)
        for name in os.listdir(self.checkpoint_dir):
            match = _PREFIX.match(name)
            if match and int(match.group(1)) != self._total_run_calls:
                os.remove(os.path.join(self.checkpoint_dir, name))

    def close(self):
        """Gives the signals back to the handlers they had before."""
        self._watcher.uninstall()
