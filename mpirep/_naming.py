"""The names operations have in the core, for the numpy API and the TensorFlow layer alike.

The core matches an operation across ranks by its name, in one namespace for every process
set, while Horovod gives each set a namespace of its own. So:

- a name the caller gives is the operation's name on the global set (``"grads"``), and is
  scoped to any other set (``"grads.set2"``): the same name used on two sets at once never
  meets;
- an unnamed operation is numbered per kind and set: ``allreduce.noname.0``,
  ``allreduce.noname.1``, ..., ``allgather.set2.noname.0``. Ranks must therefore issue the
  unnamed operations of one kind and set in the same order; a set keeps a count of its own, so
  that ranks outside it, which do not issue them, stay in step. ``restart_numbering`` (join)
  numbers them from zero again.

TensorFlow graphs name their ops with the graph's unique names instead
(mpirep/tensorflow/_naming.py), scoped to their set with ``in_set`` too.
"""

import itertools

_counters = {}


def in_set(name, process_set):
    """``name`` within process set ``process_set`` (an id; 0 is the global set)."""
    return f"{name}.set{process_set}" if process_set else str(name)


def core_name(kind, name=None, process_set=0):
    """The core's name for an operation of ``kind`` (``"allreduce"``, ...) named ``name``, or
    unnamed when ``name`` is None, on process set ``process_set``."""
    if name is not None:  # in_set, inlined: every named allreduce passes here
        return f"{name}.set{process_set}" if process_set else str(name)
    counter = _counters.get((kind, process_set))
    if counter is None:
        counter = _counters[(kind, process_set)] = itertools.count()
    return f"{in_set(kind, process_set)}.noname.{next(counter)}"


def restart_numbering():
    """Numbers unnamed operations from zero again; call only when none is in flight on any rank
    (after join)."""
    _counters.clear()
