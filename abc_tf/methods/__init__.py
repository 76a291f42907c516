"""Training methods, one package each, found by convention: ``abc_tf/methods/<name>/`` is the
method ``--method=<name>``, and a package that an installed distribution names under the entry
point group ``abc_tf.methods`` (``<name> = their_package``) is one too, so a lab keeps its own
method outside this repository.

A method's package holds, without TensorFlow, ``CONFIG`` (its config class, a
:class:`abc_tf.config.MethodConfig` declaring its batch format and capabilities), ``PRESETS``
(the paper's settings, by experiment name) and ``SMOKE`` (the smallest run it trains, for the
every-method checks); its ``model.py`` declares ``METHOD`` (a :class:`abc_tf.methods.base.Method`)
and loads with the first use. ``METHODS`` maps each name found to its
:class:`abc_tf.registry.Entry`; tests add their own entries to it. docs/ARCHITECTURE.md, "Adding a
method", lists the files to write.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from abc_tf import registry
from abc_tf.config import ExperimentConfig

if TYPE_CHECKING:  # base.py loads with the first method (Keras, TensorFlow): train.py --help needs none
    from abc_tf.methods.base import Method

ENTRY_POINT_GROUP = "abc_tf.methods"
METHODS: dict[str, registry.Entry] = registry.discover(
    __name__, __path__, ENTRY_POINT_GROUP, "model:METHOD", "method"
)


def get_method(name: str) -> Method:
    """The declaration of method ``name``; ValueError naming the known ones."""
    return registry.resolve(METHODS, name, "method", "abc_tf.methods.base:Method", "METHOD")


def check_config(config: ExperimentConfig) -> Method:
    """The method of ``config``, after its checks."""
    method = get_method(config.method.name)
    method.check_config(config)
    return method
