"""The variables of models and optimizers, for what broadcasts them (the Keras callbacks) and
what commits them (the elastic states, the Replicator's among them)."""


def optimizer_variables(optimizer):
    """An optimizer's variables: a list in Keras 3, a method in tf_keras. Of a
    ZeroRedundancyOptimizer, whose slots differ between ranks, those every rank holds alike."""
    if hasattr(optimizer, "_mpirep_replicated_variables"):
        return optimizer._mpirep_replicated_variables()
    variables = optimizer.variables
    return list(variables() if callable(variables) else variables)


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
