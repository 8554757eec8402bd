"""Lets a tf.function start each collective as soon as its input exists.

``MpirepCollective`` is registered stateful, and stays so: grappler never constant-folds,
deduplicates or prunes a stateful op, and a tf.function keeps every stateful op it creates as a
control output, so a collective runs on every rank even where its result is unused. But inside a
tf.function TensorFlow's automatic control dependencies also chain stateful ops in program order,
so each collective would wait for the one before it to finish: none would start while backprop
still runs, and none would reach the core together with another to be fused.

TensorFlow exempts ops whose side effects are independent of other ops from that chain while
keeping them as control outputs (``AutomaticControlDependencies.run_independently``, which its
infeed ops use). That is exactly a collective: its order on each rank does not matter, because
the core negotiates one order for every rank. Each native collective built in a graph is marked
so here, in the only place that touches this private TensorFlow API. It exists unchanged from
TensorFlow 2.12 to 2.21; where it is missing the op is left chained, which is correct, only
serial.

The numpy bridge is not marked: its functions hold a TensorFlow thread while they wait, and the
program order is what keeps every rank's threads waiting on the same collectives.
"""


def run_independently(op):
    """Exempts ``op`` from program-order chaining in the tf.function being traced, if any."""
    manager = getattr(op.graph, "experimental_acd_manager", None)
    mark = getattr(manager, "run_independently", None)
    if mark is not None:
        mark(op)


def is_independent(op):
    """Whether ``op`` was exempted (for tests and benchmarks that inspect a traced graph)."""
    try:
        return bool(op.get_attr("_independent_side_effects"))
    except ValueError:
        return False

