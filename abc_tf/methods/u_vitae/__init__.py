"""U-VITAE: the VAE with a spatial transformer that models the perspective (PEERS.md section 2).
Its config is the VAE's (abc_tf/methods/vae), its presets the paper's MNIST run and a quick one."""

from __future__ import annotations

from abc_tf.methods.vae import VaeConfig, variant_presets, variant_smoke

CONFIG = VaeConfig
PRESETS = variant_presets("u_vitae")
SMOKE = variant_smoke("u_vitae")
QUICK = "mnist_u_vitae_quick"
