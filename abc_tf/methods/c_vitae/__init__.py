"""C-VITAE: U-VITAE whose appearance is inferred from the aligned image (PEERS.md section 2).
Its config is the VAE's (abc_tf/methods/vae), its presets the paper's MNIST run and a quick one."""

from __future__ import annotations

from abc_tf.methods.vae import VaeConfig, variant_presets, variant_smoke

CONFIG = VaeConfig
PRESETS = variant_presets("c_vitae")
SMOKE = variant_smoke("c_vitae")
QUICK = "mnist_c_vitae_quick"
