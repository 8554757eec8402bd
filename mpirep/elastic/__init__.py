"""Elastic training with Horovod's ``hvd.elastic`` API, on MPI and Slurm: lose or gain hosts
mid-training and go on from the last commit.  Start the job with ``mpirep-run`` and its elastic
flags (``--min-np``, ``--host-discovery-script``, ...); see docs/elastic.md.

This package is the rank's side, without TensorFlow: ``run``, the states, commits, and the
lifeline to the driver.  The other layers: launch/elastic (mpirep-run's driver),
mpirep/tensorflow/elastic.py (the states of TensorFlow variables and Keras models, as
``hvd.elastic`` of ``mpirep.tensorflow``) and mpirep/tensorflow/keras/elastic.py (``KerasState``
and its callbacks, as ``hvd.elastic`` of ``mpirep.tensorflow.keras``).
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
