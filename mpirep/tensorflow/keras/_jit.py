"""Keras's ``jit_compile`` where mpirep's collectives cannot be compiled by XLA.

Keras 3 resolves ``jit_compile="auto"`` to True for TensorFlow whenever a GPU (any device but the
CPU) is listed and no tf.distribute strategy is set, without asking the optimizer. On a GPU node
the train step, DistributedOptimizer's allreduce included, would then be compiled for the GPU,
where mpirep has no XLA kernel. mpirep's callbacks see the model before its first step: where
XLA cannot hold the collectives, they compile the train step without XLA instead, and say so
once, on rank 0. Where it can (the step runs on the host), XLA stays on.
"""

import sys

import mpirep
from mpirep.tensorflow import _xla

_said = False


def settle(model):
    """Turns ``model``'s jit_compile off, and rebuilds its train function, when its collectives
    cannot be compiled by XLA; a no-op otherwise."""
    global _said
    if not getattr(model, "jit_compile", False):
        return
    reason = _xla.unavailable_reason()
    if reason is None:
        return
    model.jit_compile = False
    model.make_train_function(force=True)
    if not _said and mpirep.rank() == 0:
        _said = True
        print(f"mpirep: the train step is compiled without XLA (jit_compile=False), because "
              f"{reason}. Pass jit_compile=False to model.compile to choose this yourself.",
              file=sys.stderr, flush=True)
