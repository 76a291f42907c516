"""C-VITAE's declaration: the VITAE model of abc_tf/methods/vae/model.py in its conditional variant."""

from __future__ import annotations

from abc_tf.methods.c_vitae import PRESETS, CVitaeConfig
from abc_tf.methods.vae.model import declare_variant

METHOD = declare_variant(
    "c_vitae",
    CVitaeConfig,
    PRESETS,
    "single unlabelled images; a spatial transformer models the perspective, "
    "the appearance is inferred from the aligned image",
)
