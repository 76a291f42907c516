"""Training methods: the registry of :class:`abc_tf.methods.base.Method` declarations.

``METHODS`` maps a ``--method`` name to ``"module:NAME"``; modules are imported on first use.
Tests and users register their own methods here. See ``abc_tf/methods/base.py`` for the
interface and docs/ARCHITECTURE.md for how to add one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterable

from abc_tf import registry
from abc_tf.config import ExperimentConfig

if TYPE_CHECKING:  # base.py loads with the first method (Keras, TensorFlow): train.py --help needs none
    from abc_tf.methods.base import Method

METHODS: dict[str, str] = {
    "abc": "abc_tf.methods.abc_model:ABC",
    "contrastive": "abc_tf.methods.abc_model:CONTRASTIVE",
    "pmp": "abc_tf.methods.pmp:PMP",
    "vae": "abc_tf.methods.vitae:VAE",
    "u_vitae": "abc_tf.methods.vitae:U_VITAE",
    "c_vitae": "abc_tf.methods.vitae:C_VITAE",
    "elastic_infogan": "abc_tf.methods.elastic_infogan:ELASTIC_INFOGAN",
}


def get_method(name: str) -> Method:
    """The declaration of method ``name``; ValueError naming the known ones."""
    return registry.resolve(METHODS, name, "method", "abc_tf.methods.base:Method", "METHOD")


def check_config(config: ExperimentConfig) -> Method:
    """The method of ``config``, after its checks; a field only other methods read must keep
    its default (set, it would do nothing)."""
    method = get_method(config.method)
    registry.refuse_stray_fields(map(get_method, METHODS), method, config, f"method {config.method!r}")
    method.check_config(config)
    return method


def unused_fields(name: str, fields: Iterable[str]) -> list[str]:
    """The names among ``fields`` that only other methods read (train.py refuses them)."""
    return registry.unused_fields(map(get_method, METHODS), get_method(name), fields)
