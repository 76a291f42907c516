"""U-VITAE's declaration: the VITAE model of abc_tf/methods/vae/model.py in its unconditional variant."""

from __future__ import annotations

from abc_tf.methods.u_vitae import PRESETS, UVitaeConfig
from abc_tf.methods.vae.model import declare_variant

METHOD = declare_variant(
    "u_vitae", UVitaeConfig, PRESETS, "single unlabelled images; a spatial transformer models the perspective"
)
