"""The variables a ZeroRedundancyOptimizer updates on a rank: for each piece it owns (see
_zero_plan.py), the model's variable itself when the piece is the whole variable, else a flat
variable of its own holding that slice. The wrapped optimizer builds its slots for these, so a
slice's slots are the size of the slice."""

import tensorflow as tf


def variable_like(reference, value, name, trainable):
    """A variable of ``reference``'s kind (Keras 3 or TensorFlow) holding ``value``."""
    if hasattr(reference, "path"):  # Keras 3
        import keras

        variable = keras.Variable(value, trainable=trainable, name=name)
        if getattr(reference, "overwrite_with_gradient", False):
            variable.overwrite_with_gradient = True
        return variable
    return tf.Variable(value, trainable=trainable, name=name)


def _flat(variable):
    return tf.reshape(tf.convert_to_tensor(variable), [-1])


def _short_name(variable):
    return variable.name.split(":")[0]


def make_targets(plan, variables):
    """The variable holding each piece of ``plan.owned``, in that order."""
    targets = []
    for piece in plan.owned:
        variable = variables[piece.index]
        if plan.is_whole(piece):
            targets.append(variable)
        else:
            value = _flat(variable)[piece.start:piece.stop]
            # Named as its variable, so that rules by name (AdamW's exclusions) still apply.
            targets.append(variable_like(variable, value, _short_name(variable), True))
    return targets


def refresh_slices(plan, variables, targets):
    """Copies each owned slice's current values from its model variable (which a broadcast or
    a load may have changed since the last step); returns the assignments."""
    return [target.assign(_flat(variables[piece.index])[piece.start:piece.stop])
            for piece, target in zip(plan.owned, targets) if not plan.is_whole(piece)]

