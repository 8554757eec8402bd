"""The variables of models and optimizers, for what broadcasts them (the Keras callbacks) and
what commits them (the elastic states, the Replicator's among them)."""


# The attribute that marks a ZeroRedundancyOptimizer's per-rank variables (its slots for this
# rank's pieces). A mark on the variable itself, not a list on the optimizer, so that it holds
# whatever wraps the optimizer and lists its variables (a loss-scale optimizer, say).
SHARD_MARK = "_mpirep_shard"


def own_variables(optimizer):
    """All of an optimizer's variables: a list in Keras 3, a method in tf_keras."""
    variables = optimizer.variables
    return list(variables() if callable(variables) else variables)


def optimizer_variables(optimizer):
    """An optimizer's variables that every rank holds alike: all but a
    ZeroRedundancyOptimizer's shards and Keras's gradient accumulators (each rank's own sums of
    its micro-steps' gradients), which differ between ranks, also where another optimizer wraps
    the one that holds them."""
    local = {id(v) for o in wrapped_optimizers(optimizer)
             for v in getattr(o, "_accumulated_gradients", None) or () if v is not None}
    return [v for v in own_variables(optimizer)
            if not getattr(v, SHARD_MARK, False) and id(v) not in local]


def wrapped_optimizers(optimizer):
    """``optimizer`` and the optimizers it wraps, outermost first (a loss-scale optimizer's
    ``inner_optimizer``, Keras 2's ``_optimizer``)."""
    seen = []
    while optimizer is not None and all(optimizer is not s for s in seen):
        seen.append(optimizer)
        optimizer = getattr(optimizer, "inner_optimizer", None) or \
            getattr(optimizer, "_optimizer", None)
    return seen


def zero_optimizer(optimizer):
    """The ZeroRedundancyOptimizer that ``optimizer`` is or wraps, or None."""
    return next((o for o in wrapped_optimizers(optimizer) if hasattr(o, "_mpirep_zero")), None)


def tracked_variables(trackables):
    """Every variable of the models, optimizers and modules given, each once, in order."""
    variables = {}
    for trackable in trackables:
        found = (optimizer_variables(trackable) if hasattr(trackable, "apply_gradients")
                 else list(trackable.variables))
        for variable in found:
            variables.setdefault(id(variable), variable)
    return list(variables.values())


def build_optimizer(optimizer, variables):
    """Creates the optimizer's slot variables now rather than at its first step, so that a
    restarted rank can take committed values into them before training."""
    if getattr(optimizer, "built", getattr(optimizer, "_built", False)):
        return
    if hasattr(optimizer, "build"):
        optimizer.build(variables)      # Keras 3 and tf_keras
    else:
        optimizer._create_all_weights(variables)   # tf_keras's legacy optimizers


def accumulation_steps(optimizer):
    """How many micro-steps ``optimizer`` (or one it wraps) accumulates before it applies:
    mpirep's backward_passes_per_step or Keras 3's gradient_accumulation_steps; 1 for none."""
    for o in wrapped_optimizers(optimizer):
        state = getattr(o, "_mpirep", None) or getattr(o, "_mpirep_zero", None)
        if state is not None and state.accumulator is not None:
            return state.accumulator.steps
        if getattr(o, "gradient_accumulation_steps", None):
            return o.gradient_accumulation_steps
    return 1


def mid_accumulation(optimizer):
    """Whether ``optimizer`` holds gradients of micro-steps not applied yet: each rank's own,
    which neither a broadcast nor a backup may carry."""
    for o in wrapped_optimizers(optimizer):
        state = getattr(o, "_mpirep", None) or getattr(o, "_mpirep_zero", None)
        counter = getattr(getattr(state, "accumulator", None), "counter", None)
        if counter is not None and int(counter.numpy()) != 0:
            return True
        steps = getattr(o, "gradient_accumulation_steps", None)
        if steps and int(o._iterations.numpy()) % steps != 0:
            return True
    return False
