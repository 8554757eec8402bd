"""Names for collectives, identical on every rank as long as ranks build the same graphs and
issue the same eager calls in the same order.

Inside a graph (tf.function, tf.compat.v1) an op takes the graph's unique name for it, which
tracing makes deterministic. Eagerly, a name the caller gives is used as it is (an eager op has
finished before the next call could reuse it); unnamed eager ops are numbered per kind.
"""

import collections

import tensorflow as tf

_eager_counts = collections.Counter()


def in_set(name, set_id):
    """``name`` within process set ``set_id``. The core knows one namespace, while in Horovod
    every set has its own: the same name used on two sets at once must not meet."""
    return f"{name}.set{set_id}" if set_id else str(name)


def tensor_name(kind, name=None, ignore_name_scope=False, set_id=0):
    """The core's name for an op of ``kind`` on process set ``set_id``. Unnamed ops on a set
    other than the global one are numbered apart (and graph names are made unique apart), so
    ranks outside the set, which do not issue them, stay in step with the others."""
    if tf.executing_eagerly():
        if name is not None:
            return in_set(name, set_id)
        key = in_set(kind, set_id)
        count = _eager_counts[key]
        _eager_counts[key] += 1
        return f"{key}.{count}"
    graph = tf.compat.v1.get_default_graph()
    base = in_set(name if name is not None else kind, set_id)
    if ignore_name_scope:
        with graph.name_scope(None):
            return graph.unique_name(base)
    return graph.unique_name(base)


def reset_eager_names():
    """Numbers unnamed eager ops from zero again (after join, when no op is in flight)."""
    _eager_counts.clear()
