"""Every method on the smallest run its data allows, for the tests that train each one the same
way (tests/test_methods.py: XLA, mixed_float16 with loss scaling, two replicas): each method
package's ``SMOKE`` run (built-in data), and the toy two-network method on the toy family."""

from __future__ import annotations

import contextlib

import keras

from abc_tf import data
from abc_tf.config import ExperimentConfig
from abc_tf.runs import experiments, training
from toy_family import CONFIG as TOY
from toy_method import TwoNetworkConfig

# Two of everything a replica splits: the global batch of each is a multiple of 2.
SMALL = dict(steps=4, log_every=2)


def tiny_configs() -> dict[str, ExperimentConfig]:
    """{method: its config}: every method package's ``SMOKE`` run and the toy two-network method
    (register ``two_network`` and the toy family before training it)."""
    return {
        **experiments.smoke_configs(),
        "two_network": TOY.replace(
            method=TwoNetworkConfig(name="two_network", temperature=TOY.method.temperature), **SMALL
        ),
    }


def fit_losses(
    config: ExperimentConfig, steps: int, strategy=None, eagerly: bool = False
) -> tuple[keras.Model, list[float]]:
    """(the model, the loss of each of ``steps`` steps) of ``config``'s method, built as the
    trainer builds it (its precision policy, its seed; under ``strategy`` if given) and trained
    by ``fit`` on its family's stream, one Keras epoch a step; ``eagerly``: its step run op by
    op, not traced (the same arithmetic, without the seconds a trace costs)."""
    family = data.get_family(config.data.family)
    try:
        with strategy.scope() if strategy is not None else contextlib.nullcontext():
            model = training.build_model(config)
        model.run_eagerly = eagerly
        dataset = training.make_family_dataset(family, config, start_step=0)
        history = model.fit(dataset, epochs=steps, steps_per_epoch=1, verbose=0, shuffle=False)
    finally:
        keras.mixed_precision.set_global_policy("float32")  # build_model set the config's
    return model, history.history["loss"]
