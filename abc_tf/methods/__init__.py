"""Training methods: the registry of :class:`abc_tf.methods.base.Method` declarations.

``METHODS`` maps a ``--method`` name to ``"module:NAME"``; modules are imported on first use.
Tests and users register their own methods here. See ``abc_tf/methods/base.py`` for the
interface and docs/ARCHITECTURE.md for how to add one.
"""

from __future__ import annotations

from abc_tf import registry
from abc_tf.methods.base import Method

METHODS: dict[str, str] = {
    "abc": "abc_tf.methods.abc_model:ABC",
    "contrastive": "abc_tf.methods.abc_model:CONTRASTIVE",
}


def get_method(name: str) -> Method:
    """The declaration of method ``name``; ValueError naming the known ones."""
    return registry.resolve(METHODS, name, "method", Method, "METHOD")
