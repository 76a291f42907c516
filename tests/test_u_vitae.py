"""U-VITAE (abc_tf/methods/u_vitae: the VITAE model of abc_tf/methods/vae in its unconditional
variant): the importance weights of its likelihood estimate, and the package's declaration and
presets. The ELBO terms and the run through the trainer: tests/test_vae.py."""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from abc_tf import methods
from abc_tf.methods.u_vitae import UVitaeConfig
from abc_tf.methods.vae import losses as vitae_losses
from abc_tf.methods.vae import networks as vitae_networks
from abc_tf.runs import experiments
from abc_tf.runs.experiments import get_preset


def random_images(seed: int, batch: int = 6) -> np.ndarray:
    return np.random.default_rng(seed).uniform(size=(batch, 28, 28, 1)).astype(np.float32)


def test_importance_weights_are_the_elbo_terms_at_the_sample():
    networks = vitae_networks.build_networks(UVitaeConfig.structure, 4, (28, 28, 1))
    x = random_images(2)
    out = vitae_losses.infer(
        networks, UVitaeConfig.structure, x, vitae_losses.draw_noise(6, (2, 2), tf.constant([3, 4], tf.int64))
    )
    terms = vitae_losses.elbo_terms(x, out)
    # E_q[log w] = ELBO; with single samples, log w and -rec - KLs differ by a zero-mean term only.
    log_w = vitae_losses.log_weights(x, out)
    assert log_w.shape == (6,) and np.all(np.isfinite(log_w))
    elbo = -(terms["reconstruction"] + terms["kl_appearance"] + terms["kl_perspective"])
    assert abs(float(np.mean(log_w - elbo))) < 10.0


def test_the_package_declares_the_variant_its_config_and_the_paper_s_presets():
    assert (
        methods.get_method("u_vitae").name == "u_vitae"
        and experiments.method_config_class("u_vitae") is UVitaeConfig
    )
    assert (
        methods.get_method("u_vitae").measures
        == "abc_tf.evaluation.tasks.method_measures:likelihood_measures"
    )
    paper, quick = get_preset("mnist_u_vitae"), get_preset("mnist_u_vitae_quick")
    # Table 1's MLPs, d = 4 split 2 + 2, Adam 1e-4, batches of 512, 211,200 steps (abc_tf/methods/vae).
    assert (
        paper.method.name,
        paper.method.latent_dim,
        paper.trainer.learning_rate,
        paper.batch.batch_size,
        paper.trainer.steps,
    ) == ("u_vitae", 4, 1e-4, 512, 211_200)
    assert quick.method.name == "u_vitae" and quick.trainer.steps == 5000
    smoke = experiments.smoke_configs()["u_vitae"]
    smoke.validate()
    assert smoke.data.source == "procedural" and smoke.method.name == "u_vitae"
