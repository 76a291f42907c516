"""Training methods: the registry of :class:`abc_tf.methods.base.Method` declarations.

``METHODS`` maps a ``--method`` name to a :class:`abc_tf.registry.Entry`: the declaration
(``"module:NAME"``) and the method's config class (a :class:`abc_tf.config.MethodConfig`, in a
module without TensorFlow); modules are imported on first use.
Tests and users register their own methods here. See ``abc_tf/methods/base.py`` for the
interface and docs/ARCHITECTURE.md for how to add one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from abc_tf import registry
from abc_tf.config import ExperimentConfig

if TYPE_CHECKING:  # base.py loads with the first method (Keras, TensorFlow): train.py --help needs none
    from abc_tf.methods.base import Method

METHODS: dict[str, registry.Entry] = {
    "abc": registry.Entry("abc_tf.methods.abc_model:ABC", "abc_tf.methods.abc_config:AbcConfig"),
    "contrastive": registry.Entry("abc_tf.methods.abc_model:CONTRASTIVE", "abc_tf.methods.abc_config:ContrastiveConfig"),
    "pmp": registry.Entry("abc_tf.methods.pmp:PMP", "abc_tf.methods.pmp_config:PmpConfig"),
    "vae": registry.Entry("abc_tf.methods.vitae:VAE", "abc_tf.methods.vitae_config:VaeConfig"),
    "u_vitae": registry.Entry("abc_tf.methods.vitae:U_VITAE", "abc_tf.methods.vitae_config:VaeConfig"),
    "c_vitae": registry.Entry("abc_tf.methods.vitae:C_VITAE", "abc_tf.methods.vitae_config:VaeConfig"),
    "elastic_infogan": registry.Entry("abc_tf.methods.elastic_infogan:ELASTIC_INFOGAN",
                                      "abc_tf.methods.infogan_config:ElasticInfoGanConfig"),
    "ml_vae": registry.Entry("abc_tf.methods.ml_vae:METHOD", "abc_tf.methods.ml_vae_config:MlVaeConfig"),
    "cc_vae": registry.Entry("abc_tf.methods.cc_vae:METHOD", "abc_tf.methods.cc_vae_config:CcVaeConfig"),
    "lord": registry.Entry("abc_tf.methods.lord:METHOD", "abc_tf.methods.lord_config:LordConfig"),
}


def get_method(name: str) -> Method:
    """The declaration of method ``name``; ValueError naming the known ones."""
    return registry.resolve(METHODS, name, "method", "abc_tf.methods.base:Method", "METHOD")


def check_config(config: ExperimentConfig) -> Method:
    """The method of ``config``, after its checks."""
    method = get_method(config.method.name)
    method.check_config(config)
    return method
