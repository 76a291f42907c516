"""Product-manifold projection networks (models/pmp_networks.py) against the supplement's Table 1:
layer shapes and parameter counts, the padding of the 4x4 stride-2 (transposed) convolutions,
the k projectors, the representation z = sum_i s_i, saving and mixed precision."""

from __future__ import annotations

import keras
import numpy as np
import pytest

import models
from models import pmp_networks
from tolerance_helpers import rounding_rtol

D, K = 10, 10


def conv_params(kernel, channels_in, channels_out):
    return kernel * kernel * channels_in * channels_out + channels_out


def dense_params(units_in, units_out):
    return units_in * units_out + units_out


def layer_table(model):
    return [(layer.name, tuple(layer.output.shape[1:]), layer.count_params()) for layer in model.layers[1:]]


def test_encoder_is_table_1():
    encoder = models.build("pmp_encoder", embedding_dim=D, input_shape=(64, 64, 3))
    # Table 1: 4x4 conv 32, 32, 64, 64 (ReLU, stride 2, padding 1), FC 256 ReLU, FC d.
    assert layer_table(encoder) == [
        ("conv1", (32, 32, 32), conv_params(4, 3, 32)),
        ("conv2", (16, 16, 32), conv_params(4, 32, 32)),
        ("conv3", (8, 8, 64), conv_params(4, 32, 64)),
        ("conv4", (4, 4, 64), conv_params(4, 64, 64)),
        ("flatten", (1024,), 0),
        ("hidden", (256,), dense_params(1024, 256)),
        ("features", (D,), dense_params(256, D)),
    ]
    assert encoder.count_params() == 381_386
    assert all(layer.activation is keras.activations.relu for layer in encoder.layers[1:5])
    assert encoder.get_layer("features").activation is keras.activations.linear


def test_decoder_is_table_1():
    decoder = models.build("pmp_decoder", embedding_dim=D, output_shape=(64, 64, 3))
    # Table 1: FC 256, FC 256, FC 64*4*4 (ReLU), 4x4 upconvs 64, 32, 32 (ReLU), channels.
    assert layer_table(decoder) == [
        ("hidden1", (256,), dense_params(D, 256)),
        ("hidden2", (256,), dense_params(256, 256)),
        ("hidden3", (1024,), dense_params(256, 1024)),
        ("unflatten", (4, 4, 64), 0),
        ("upconv1", (8, 8, 64), conv_params(4, 64, 64)),
        ("upconv2", (16, 16, 32), conv_params(4, 64, 32)),
        ("upconv3", (32, 32, 32), conv_params(4, 32, 32)),
        ("upconv4", (64, 64, 3), conv_params(4, 32, 3)),
    ]
    assert decoder.count_params() == 448_131
    assert decoder.get_layer("upconv4").activation is keras.activations.linear
    # A one-channel variant (dSprites-like) changes only the last layer.
    assert models.build(
        "pmp_decoder", embedding_dim=D, output_shape=(64, 64, 1)
    ).count_params() == 448_131 - 2 * (16 * 32 + 1)


def test_same_padding_is_the_table_s_padding_1():
    rng = np.random.default_rng(0)
    images = rng.random((2, 16, 16, 3)).astype(np.float32)
    same = keras.layers.Conv2D(4, 4, strides=2, padding="same")
    explicit = keras.layers.Conv2D(4, 4, strides=2, padding="valid")
    out = same(images)
    explicit.build(images.shape[:-3] + (18, 18, 3))
    explicit.set_weights(same.get_weights())
    padded = np.pad(images, ((0, 0), (1, 1), (1, 1), (0, 0)))
    # Two convolutions (another padding, another kernel path): 4 x 4 x 3 = 48 products of pixels
    # in [0, 1] summed, so within rounding_rtol(48) of the sum of the kernel's |weights|.
    kernel = same.get_weights()[0]
    np.testing.assert_allclose(
        out, explicit(padded), atol=rounding_rtol(48) * np.abs(kernel).sum(axis=(0, 1, 2)).max()
    )
    # Transposed: padding 1 crops one row and column on each side of the full ('valid') output.
    codes = rng.random((2, 4, 4, 5)).astype(np.float32)
    same_t = keras.layers.Conv2DTranspose(3, 4, strides=2, padding="same")
    full_t = keras.layers.Conv2DTranspose(3, 4, strides=2, padding="valid")
    out = same_t(codes)
    full_t.build(codes.shape)
    full_t.set_weights(same_t.get_weights())
    full = np.asarray(full_t(codes))
    assert full.shape[1:3] == (10, 10) and out.shape[1:3] == (8, 8)
    # Stride 2: each output sums (4 / 2)^2 x 5 = 20 products of codes in [0, 1], and at most all
    # of the kernel's |weights|.
    kernel = same_t.get_weights()[0]
    np.testing.assert_allclose(
        out, full[:, 1:-1, 1:-1], atol=rounding_rtol(20) * np.abs(kernel).sum(axis=(0, 1, 3)).max()
    )


def test_projectors_are_k_separate_two_layer_networks_and_z_is_their_sum():
    projectors = models.build("pmp_projectors", embedding_dim=D, num_subspaces=K)
    assert projectors.count_params() == K * (dense_params(D, D) + dense_params(D, D))
    layer = projectors.get_layer("projectors")
    rng = np.random.default_rng(1)
    layer.set_weights([rng.normal(size=w.shape).astype(np.float32) for w in layer.get_weights()])
    features = rng.normal(size=(5, D)).astype(np.float32)
    codes = np.asarray(projectors(features))
    assert codes.shape == (5, K, D)
    w1, b1, w2, b2 = layer.get_weights()
    for i in range(K):
        expected = np.maximum(features @ w1[i] + b1[i], 0.0) @ w2[i] + b2[i]
        # Two float32 evaluations of two layers of D + 1 terms: within rounding_rtol(2 D + 2) of
        # the same layers on the terms' magnitudes.
        size = (np.abs(features) @ np.abs(w1[i]) + np.abs(b1[i])) @ np.abs(w2[i]) + np.abs(b2[i])
        np.testing.assert_allclose(codes[:, i], expected, rtol=0, atol=rounding_rtol(2 * D + 2) * size.max())
    # Each projector starts like a Dense layer: Glorot-uniform over its own d x d kernel.
    fresh = (
        models.build("pmp_projectors", embedding_dim=D, num_subspaces=K).get_layer("projectors").get_weights()
    )
    assert np.abs(fresh[0]).max() <= np.sqrt(6 / (2 * D)) and np.all(fresh[1] == 0)

    encoder = models.build("pmp_encoder", embedding_dim=D)
    z_model = pmp_networks.representation(encoder, projectors)
    images = rng.random((3, 64, 64, 3)).astype(np.float32)
    # The same codes (the same layers and shapes), summed over K by the model and by NumPy.
    codes = np.asarray(projectors(encoder(images)))
    np.testing.assert_allclose(
        z_model(images), codes.sum(axis=1), rtol=0, atol=rounding_rtol(K) * np.abs(codes).sum(axis=1).max()
    )
    # The representation shares the weights: it holds no variables of its own.
    assert len(z_model.weights) == len(encoder.weights) + len(projectors.weights)


def test_the_representation_saves_and_loads(tmp_path):
    encoder = models.build("pmp_encoder", embedding_dim=4)
    z_model = pmp_networks.representation(
        encoder, models.build("pmp_projectors", embedding_dim=4, num_subspaces=3)
    )
    path = str(tmp_path / "encoder.keras")
    z_model.save(path)
    loaded = keras.saving.load_model(path, compile=False)
    images = np.random.default_rng(2).random((2, 64, 64, 3)).astype(np.float32)
    np.testing.assert_allclose(
        loaded(images), z_model(images), rtol=1e-5, atol=1e-6
    )  # the same layers and weights: equal


def test_outputs_stay_float32_under_mixed_precision():
    keras.mixed_precision.set_global_policy("mixed_bfloat16")
    try:
        encoder = models.build("pmp_encoder", embedding_dim=D)
        decoder = models.build("pmp_decoder", embedding_dim=D)
        projectors = models.build("pmp_projectors", embedding_dim=D, num_subspaces=K)
    finally:
        keras.mixed_precision.set_global_policy("float32")
    assert encoder.get_layer("conv1").compute_dtype == "bfloat16"
    images = np.zeros((1, 64, 64, 3), np.float32)
    features = encoder(images)
    assert features.dtype == "float32" and projectors(features).dtype == "float32"
    assert decoder(features).dtype == "float32"


@pytest.mark.parametrize(
    "builder, kwargs",
    [("pmp_encoder", {"input_shape": (60, 64, 3)}), ("pmp_decoder", {"output_shape": (64, 40, 1)})],
)
def test_sizes_the_table_cannot_take_are_refused(builder, kwargs):
    with pytest.raises(ValueError, match="multiples of 16 \\(Table 1: 64x64\\)"):
        models.build(builder, embedding_dim=D, **kwargs)
