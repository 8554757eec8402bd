"""Surviving time limits and preemption (docs/preemption.md): a signal sets a flag, the ranks
agree at a step boundary to stop there, rank 0 saves a backup atomically, and the job is
requeued under Slurm or ends with ``EXIT_STATUS``.

Framework-free: the Keras callback (``mpirep.tensorflow.keras.callbacks.BackupAndRestore``) and
the custom-loop handler (``mpirep.tensorflow.PreemptionCheckpointHandler``) build on it."""

from mpirep.preemption._atomic import atomic_write
from mpirep.preemption._ending import EXIT_STATUS, stop_job
from mpirep.preemption._signals import SignalWatcher, parse_signals

__all__ = ["EXIT_STATUS", "SignalWatcher", "atomic_write", "parse_signals",
           "stop_job"]
