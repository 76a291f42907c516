"""The VAE / VITAE networks (abc_tf/methods/vae/networks.py): Table 1's shapes and hand-counted
parameters, the variance floor, the perspective decoder starting at the identity, and the
compositions saved and loaded as .keras files with their weights."""

from __future__ import annotations

import keras
import numpy as np
import pytest

import models
from models import spatial_transformer
from abc_tf.methods.vae import networks as vitae_networks


def dense(inputs: int, outputs: int) -> int:
    return inputs * outputs + outputs


def test_table_1_shapes_and_parameter_counts():
    encoder = models.build("gaussian_encoder", latent_dim=4)
    mean, variance = encoder(np.zeros((3, 28, 28, 1), np.float32))
    assert mean.shape == variance.shape == (3, 4)
    mlp = (
        dense(784, 128) + dense(128, 64) + dense(64, 4)
    )  # 128-64-d, once for the mean, once for the variance
    assert encoder.count_params() == 2 * mlp
    decoder = models.build("bernoulli_decoder", latent_dim=4)
    assert decoder(np.zeros((3, 4), np.float32)).shape == (3, 28, 28, 1)
    assert decoder.count_params() == dense(4, 64) + dense(64, 64) + dense(64, 784)
    # VITAE: about half the units per network.
    half = models.build("gaussian_encoder", latent_dim=2, units=vitae_networks.VITAE_ENCODER_UNITS)
    assert half.count_params() == 2 * (dense(784, 64) + dense(64, 32) + dense(32, 2))
    assert vitae_networks.LEAKY_SLOPE == 0.1


def test_variances_are_positive_and_probabilities_in_the_unit_interval():
    rng = np.random.default_rng(0)
    encoder = models.build("gaussian_encoder", latent_dim=2)
    for layer in encoder.layers:
        if layer.name == "variance_softplus":
            layer.bias.assign(np.full(2, -50.0, np.float32))  # softplus underflows to 0
    _, variance = encoder(rng.uniform(size=(4, 28, 28, 1)).astype(np.float32))
    assert np.all(np.asarray(variance) >= vitae_networks.VARIANCE_FLOOR * 0.99)
    probabilities = np.asarray(
        models.build("bernoulli_decoder", latent_dim=2)(rng.normal(size=(4, 2)).astype(np.float32) * 10)
    )
    assert probabilities.min() >= 0.0 and probabilities.max() <= 1.0


def test_the_affine_decoder_starts_at_the_identity():
    affine = models.build("affine_decoder", latent_dim=2)
    theta = np.asarray(affine(np.random.default_rng(1).normal(size=(5, 2)).astype(np.float32)))
    np.testing.assert_array_equal(theta, np.zeros((5, spatial_transformer.THETA_DIM)))


@pytest.mark.slow
def test_the_compositions_save_and_load_with_their_weights(tmp_path):
    rng = np.random.default_rng(2)
    perspective = models.build("gaussian_encoder", latent_dim=2, model_name="perspective_posterior")
    affine = models.build("affine_decoder", latent_dim=2)
    affine.get_layer("theta").bias.assign(
        rng.normal(scale=0.2, size=6).astype(np.float32)
    )  # a non-trivial warp
    appearance = models.build("gaussian_encoder", latent_dim=2, model_name="appearance_posterior")
    template = models.build("bernoulli_decoder", latent_dim=2, model_name="appearance_decoder")
    x = rng.uniform(size=(3, 28, 28, 1)).astype(np.float32)
    built = {
        "encoder": vitae_networks.vitae_codes(
            perspective, affine, appearance, True, output="encoder", name="encoder"
        ),
        "appearance": vitae_networks.vitae_codes(
            perspective, affine, appearance, True, output="appearance", name="appearance"
        ),
        "perspective": vitae_networks.mean_of(perspective, name="perspective"),
    }
    codes = np.asarray(built["encoder"](x))
    # The compositions call these very networks and the same warp on the same images: equal.
    np.testing.assert_allclose(codes[:, 2:], perspective(x)[0], atol=1e-6)
    aligned = spatial_transformer.warp(
        x, spatial_transformer.affine_matrices(affine(perspective(x)[0]), inverse=True)
    )
    np.testing.assert_allclose(codes[:, :2], appearance(aligned)[0], atol=1e-5)
    generator = vitae_networks.vitae_generator(template, affine)
    z = rng.normal(size=(3, 2)).astype(np.float32)
    for name, model, inputs in [
        *((name, model, x) for name, model in built.items()),
        ("decoder", generator, [z, z]),
    ]:
        path = str(tmp_path / f"{name}.keras")
        model.save(path)
        loaded = keras.saving.load_model(path, compile=False)
        np.testing.assert_allclose(
            loaded(inputs), model(inputs), atol=1e-6
        )  # the same layers and weights: equal
