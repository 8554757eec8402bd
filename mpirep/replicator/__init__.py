"""The Replicator: TF-Replicator's programming model (an input function and a step function, one
replica per MPI process) on mpirep's collectives. See docs/replicator.md."""

from mpirep.replicator.input import InputContext
from mpirep.replicator.replicator import Replicator

__all__ = ["InputContext", "Replicator"]
