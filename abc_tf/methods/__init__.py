"""Training methods, one package each, found by convention.

``abc_tf/methods/<name>/`` is the method ``--method=<name>``. So is a package that an installed
distribution names under the entry point group ``abc_tf.methods`` (``<name> = their_package``).
A lab can thus keep its own method outside this repository.

A method's package declares ``METHOD``, a :class:`abc_tf.methods.base.Method`, in its ``model.py``.
It holds the config class, presets, smallest run, model and checks in one place. ``METHODS`` maps
each name found to its :class:`abc_tf.registry.Entry`; tests add their own entries to it.
docs/ARCHITECTURE.md, "Adding a method", shows the contract.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from abc_tf import registry
from abc_tf.config import ExperimentConfig

if TYPE_CHECKING:  # base.py (Keras, TensorFlow) loads with the first method
    from abc_tf.methods.base import Method

ENTRY_POINT_GROUP = "abc_tf.methods"
METHODS: dict[str, registry.Entry] = registry.discover(
    __name__, __path__, ENTRY_POINT_GROUP, "model:METHOD", "method"
)


def get_method(name: str) -> Method:
    """The declaration of method ``name``; ValueError naming the known ones."""
    return registry.resolve(METHODS, name, "method", "abc_tf.methods.base:Method")


def check_config(config: ExperimentConfig) -> Method:
    """The method of ``config``, after its checks."""
    method = get_method(config.method.name)
    method.check_config(config)
    return method
