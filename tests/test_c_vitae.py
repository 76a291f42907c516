"""C-VITAE (abc_tf/methods/c_vitae: the VITAE model of abc_tf/methods/vae in its conditional
variant): the inference order (perspective, aligned image, appearance, template warped back) and
the package's declaration and presets. The ELBO terms and the run through the trainer: tests/test_vae.py."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from abc_tf import methods
from abc_tf.methods.c_vitae import CVitaeConfig
from abc_tf.methods.u_vitae import UVitaeConfig
from abc_tf.methods.vae import Structure, VaeConfig
from abc_tf.methods.vae import losses as vitae_losses
from abc_tf.methods.vae import networks as vitae_networks
from abc_tf.runs import experiments
from abc_tf.runs.experiments import get_preset
from models import spatial_transformer


def random_images(seed: int, batch: int = 6) -> np.ndarray:
    return np.random.default_rng(seed).uniform(size=(batch, 28, 28, 1)).astype(np.float32)


def test_c_vitae_infers_the_appearance_from_the_aligned_image_and_warps_the_template_back():
    networks = vitae_networks.build_networks(CVitaeConfig.structure, 4, (28, 28, 1))
    # A known perspective: dec_P's output bias is theta (its kernel starts at zero).
    theta = np.array([0.1, -0.2, 0.15, 0.05, 0.0, -0.1], np.float32)
    networks["affine_decoder"].get_layer("theta").bias.assign(theta)
    x = random_images(1, 4)
    noise = vitae_losses.draw_noise(4, (2, 2), tf.constant([1, 2], tf.int64))
    out = vitae_losses.infer(networks, CVitaeConfig.structure, x, noise)
    # infer runs the very ops below on the same tensors (theta: a zero kernel plus the bias): equal.
    np.testing.assert_allclose(out["theta"], np.tile(theta, (4, 1)), atol=1e-6)
    aligned = spatial_transformer.warp(
        x, spatial_transformer.affine_matrices(np.tile(theta, (4, 1)), inverse=True)
    )
    np.testing.assert_allclose(out["aligned"], aligned, atol=1e-6)
    mean, variance = networks["appearance_posterior"](aligned)
    np.testing.assert_allclose(out["appearance_mean"], mean, atol=1e-6)
    np.testing.assert_allclose(out["appearance_z"], mean + np.sqrt(variance) * noise["appearance"], atol=1e-6)
    template = networks["appearance_decoder"](out["appearance_z"])
    warped = spatial_transformer.warp(template, spatial_transformer.affine_matrices(np.tile(theta, (4, 1))))
    np.testing.assert_allclose(out["probabilities"], warped, atol=1e-6)
    # U-VITAE reads the appearance from the image itself.
    u_out = vitae_losses.infer(networks, UVitaeConfig.structure, x, noise)
    np.testing.assert_allclose(u_out["appearance_mean"], networks["appearance_posterior"](x)[0], atol=1e-6)
    assert "aligned" not in u_out


def test_the_package_declares_the_variant_its_config_and_the_paper_s_presets():
    assert (
        methods.get_method("c_vitae").name == "c_vitae"
        and experiments.method_config_class("c_vitae") is CVitaeConfig
    )
    assert (
        methods.get_method("c_vitae").measures
        == "abc_tf.evaluation.tasks.method_measures:likelihood_measures"
    )
    paper, quick = get_preset("mnist_c_vitae"), get_preset("mnist_c_vitae_quick")
    # Table 1's MLPs, d = 4 split 2 + 2, Adam 1e-4, batches of 512, 211,200 steps (abc_tf/methods/vae).
    assert (
        paper.method.name,
        paper.method.latent_dim,
        paper.trainer.learning_rate,
        paper.batch.batch_size,
        paper.trainer.steps,
    ) == ("c_vitae", 4, 1e-4, 512, 211_200)
    assert quick.method.name == "c_vitae" and quick.trainer.steps == 5000
    smoke = experiments.smoke_configs()["c_vitae"]
    smoke.validate()
    assert smoke.data.source == "procedural" and smoke.method.name == "c_vitae"
    # The variant is its config's declared structure; the model reads nothing else.
    assert issubclass(CVitaeConfig, VaeConfig) and isinstance(paper.method, CVitaeConfig)
    assert CVitaeConfig.structure == Structure(perspective=True, aligned_appearance=True)
    assert VaeConfig.structure == Structure() and UVitaeConfig.structure == Structure(perspective=True)
    with pytest.raises(ValueError, match="aligned_appearance needs a perspective space"):
        Structure(aligned_appearance=True)
