"""Elastic training with Horovod's ``hvd.elastic`` API, on MPI and Slurm: lose or gain hosts
mid-training and go on from the last commit.  Start the job with ``mpirep-run`` and its elastic
flags (``--min-np``, ``--host-discovery-script``, ...); see docs/elastic.md.

The TensorFlow states are in ``mpirep.tensorflow.elastic`` and
``mpirep.tensorflow.keras.elastic``.
"""
from mpirep.elastic.errors import (
    HorovodInternalError,
    HostsChangedInterrupt,
    HostsUpdatedInterrupt,
    RanksLostError,
)
from mpirep.elastic.reset_loop import run
from mpirep.elastic.state import ObjectState, State

__all__ = ["HorovodInternalError", "HostsChangedInterrupt", "HostsUpdatedInterrupt",
           "ObjectState", "RanksLostError", "State", "run"]
