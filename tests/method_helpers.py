"""Every method on the smallest run its data allows, for the tests that train each one the same
way (tests/test_methods.py): each method's ``smallest_run`` on built-in data, and the toy
two-network method on the toy family."""

from __future__ import annotations

from abc_tf.config import ExperimentConfig
from abc_tf.runs import experiments
from toy_family import CONFIG as TOY
from toy_method import TwoNetworkConfig

# Two of everything a replica splits: the global batch of each is a multiple of 2.
SMALL = dict(steps=4, log_every=2)


def tiny_configs() -> dict[str, ExperimentConfig]:
    """{method: its config}: every method's smallest run and the toy two-network method.

    Register ``two_network`` and the toy family before training it."""
    return {
        **experiments.smoke_configs(),
        "two_network": TOY.replace(
            method=TwoNetworkConfig(name="two_network", temperature=TOY.method.temperature), **SMALL
        ),
    }
