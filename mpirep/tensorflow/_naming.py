"""Names for collectives in TensorFlow, identical on every rank as long as ranks build the same
graphs and issue the same eager calls in the same order.

Eagerly, an op is named as the numpy API names it (mpirep/_naming.py): a name the caller gives,
scoped to its process set, or else a number per kind and set. Inside a graph (tf.function,
tf.compat.v1) an op takes the graph's unique name for that instead, which tracing makes
deterministic, scoped to its set the same way.
"""

import tensorflow as tf

from mpirep import _naming


def tensor_name(kind, name=None, ignore_name_scope=False, set_id=0):
    """The core's name for an op of ``kind`` on process set ``set_id``. A graph makes the names
    of a set other than the global one unique apart from the others', so that ranks outside the
    set, which do not build its ops, stay in step."""
    if tf.executing_eagerly():
        return _naming.core_name(kind, name, set_id)
    graph = tf.compat.v1.get_default_graph()
    base = _naming.in_set(name if name is not None else kind, set_id)
    if ignore_name_scope:
        with graph.name_scope(None):
            return graph.unique_name(base)
    return graph.unique_name(base)
