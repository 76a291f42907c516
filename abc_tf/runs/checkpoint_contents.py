"""What a checkpoint holds: the model's weights and the state of every optimizer it has.

Here are the rules for a model with several optimizers (:func:`build_optimizers`). Each optimizer
is a model attribute, and the model says which variables each one updates. Checkpoints are
numbered by the step of the optimizer ``compile`` got (:func:`optimizer_step`).
"""

from __future__ import annotations

import keras
import tensorflow as tf


def optimizers_of(model: keras.Model) -> dict[str, keras.optimizers.Optimizer]:
    """Every optimizer that is an attribute of ``model``, by attribute name in sorted order.

    Compile's optimizer is "optimizer". An optimizer held under two names gets the first.
    """
    found: dict[str, keras.optimizers.Optimizer] = {}
    attributes = vars(model)
    for name in sorted(attributes):
        value = attributes[name]
        if isinstance(value, keras.optimizers.Optimizer) and all(
            value is not seen for seen in found.values()
        ):
            found[name] = value
    listed = getattr(model, "optimizers", None)
    if callable(listed):  # abc_tf.methods.base.MethodModel says which optimizers it has
        hidden = [
            optimizer for optimizer in listed() if all(optimizer is not seen for seen in found.values())
        ]
        if hidden:
            raise ValueError(
                f"{type(model).__name__}.optimizers() names {len(hidden)} optimizer(s) "
                "that are not attributes of the model; "
                "a checkpoint saves the optimizers found as attributes: assign each to one."
            )
    return found


def checkpoint_of(model: keras.Model) -> tf.train.Checkpoint:
    """The ``tf.train.Checkpoint`` of the model's weights and every optimizer's variables, fixed names.

    ``weights`` holds ``model.weights`` in their order. ``optimizers/<name>`` holds the variables of every
    Keras optimizer that is an attribute of the model: iterations, learning rate and slots.
    ``tf.train.Checkpoint(model=model)`` alone is not enough with Keras 3. It follows only TensorFlow
    trackables, so networks or optimizers in a list or dict attribute would be silently left out.
    """
    return tf.train.Checkpoint(
        weights=list(model.weights),
        optimizers={name: list(optimizer.variables) for name, optimizer in optimizers_of(model).items()},
    )


def state_bytes(model: keras.Model) -> int:
    """The bytes of the model's weights and its optimizers' variables, each variable counted once."""
    variables = {
        id(v): v
        for v in list(model.weights) + [v for o in optimizers_of(model).values() for v in o.variables]
    }
    return sum(
        int(tf.TensorShape(v.shape).num_elements()) * tf.as_dtype(v.dtype).size for v in variables.values()
    )


def optimizer_step(model: keras.Model) -> int:
    """``model.optimizer.iterations``, the step a checkpoint is numbered by."""
    if model.optimizer is None:
        raise ValueError(
            "Checkpoints are numbered by model.optimizer.iterations: compile the model with its optimizer."
        )
    return int(keras.ops.convert_to_numpy(model.optimizer.iterations))


def build_optimizers(model: keras.Model) -> None:
    """Builds every optimizer of ``model`` not built yet, so that their slots exist before a restore.

    A model with one optimizer builds it on ``model.trainable_variables``, as Keras does.
    A model with several, such as a GAN's ``g_optimizer`` and ``d_optimizer``, follows three rules:

    - Every optimizer is a model attribute. ``compile`` gets the one applied once per training step,
      e.g. ``compile(optimizer=self.g_optimizer)``, since checkpoints are numbered by its iterations.
    - The model defines ``optimizer_variables(optimizer)``, the variables that optimizer updates,
      as ``abc_tf.methods.base.MethodModel`` does.
    - Optimizers are built on those variables here before training; MethodModel's ``fit`` does it.
      Keras's ``fit`` would build compile's on every trainable variable.
    """
    optimizers = optimizers_of(model)
    owned = getattr(model, "optimizer_variables", None)
    for name, optimizer in optimizers.items():
        if optimizer.built:
            continue
        if callable(owned):
            optimizer.build(owned(optimizer))
        elif len(optimizers) == 1:
            optimizer.build(model.trainable_variables)
        else:
            raise ValueError(
                f"{type(model).__name__} has {len(optimizers)} optimizers ({', '.join(optimizers)}) and no "
                "optimizer_variables(optimizer) method saying which variables each updates; "
                "define it so that a restore can build them before loading their state."
            )
