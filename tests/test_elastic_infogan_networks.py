"""InfoGAN's MNIST networks (abc_tf/methods/elastic_infogan/networks.py): shapes, ranges, float32
outputs, shared weights, the authors' initial weights."""

from __future__ import annotations

import keras
import numpy as np

import models
from abc_tf.methods.elastic_infogan import networks as infogan


def test_the_networks_have_infogan_s_shapes_and_ranges():
    keras.utils.set_random_seed(0)
    generator = models.build("infogan_generator")
    trunk, d_head = models.build("infogan_trunk"), models.build("infogan_d_head")
    q_features, q_logits = models.build("infogan_q_features"), models.build("infogan_q_logits")
    z = np.random.default_rng(0).normal(size=(5, 72)).astype(np.float32) * 3
    images = generator(z, training=False).numpy()
    assert images.shape == (5, 28, 28, 1) and images.min() >= 0.0 and images.max() <= 1.0
    features = trunk(images)
    assert features.shape == (5, 1024)
    assert d_head(features).shape == (5, 1) and q_logits(q_features(features)).shape == (5, 10)
    assert q_features(features).shape == (5, 128)
    # The layer sizes of docs/PAPERS.md section P3: FC1024, FC 128*7*7, deconv 64 and 1 (4x4).
    dense = [layer.kernel.shape for layer in generator.layers if isinstance(layer, keras.layers.Dense)]
    assert dense == [(72, 1024), (1024, 6272)]
    convs = [layer.kernel.shape for layer in trunk.layers if isinstance(layer, keras.layers.Conv2D)]
    assert convs == [(4, 4, 1, 64), (4, 4, 64, 128)]


def test_the_trunk_sees_images_in_the_generator_s_tanh_range():
    trunk = models.build("infogan_trunk")
    scaled = keras.Model(trunk.input, trunk.get_layer("to_tanh_range").output)
    images = np.zeros((1, 28, 28, 1), np.float32)
    images[0, 0, :3, 0] = [0.0, 0.5, 1.0]
    np.testing.assert_allclose(scaled(images).numpy()[0, 0, :3, 0], [-1.0, 0.0, 1.0])


def test_chain_shares_the_weights_of_its_parts():
    trunk, q_features = models.build("infogan_trunk"), models.build("infogan_q_features")
    encoder = infogan.chain(trunk, q_features, name="encoder")
    images = np.random.default_rng(1).uniform(size=(3, 28, 28, 1)).astype(np.float32)
    np.testing.assert_allclose(
        encoder(images).numpy(), q_features(trunk(images)).numpy(), atol=1e-6
    )  # the same layers: equal
    assert {id(v) for v in encoder.weights} == {id(v) for v in trunk.weights + q_features.weights}


def test_the_weights_start_as_the_authors():
    """utils.initialize_weights of the authors' code: every kernel N(0, 0.02), every bias zero;
    batch normalisation at scale 1, offset 0. Each kernel's sample std lies within five of its
    standard errors (0.02 / sqrt(2 n) for n values) of 0.02."""
    keras.utils.set_random_seed(0)
    networks = [
        models.build(name)
        for name in (
            "infogan_generator",
            "infogan_trunk",
            "infogan_d_head",
            "infogan_q_features",
            "infogan_q_logits",
        )
    ]
    kernels = []
    for network in networks:
        for layer in network.layers:
            if hasattr(layer, "kernel"):
                values = layer.kernel.numpy().ravel()
                kernels.append(values)
                assert abs(values.std() - infogan.INIT_STDDEV) < 5 * infogan.INIT_STDDEV / np.sqrt(
                    2 * values.size
                ), layer.name
                assert abs(values.mean()) < 5 * infogan.INIT_STDDEV / np.sqrt(values.size), layer.name
            if getattr(layer, "bias", None) is not None:
                np.testing.assert_array_equal(layer.bias.numpy(), 0.0)
            if isinstance(layer, keras.layers.BatchNormalization):
                np.testing.assert_array_equal(layer.gamma.numpy(), 1.0)
                np.testing.assert_array_equal(layer.beta.numpy(), 0.0)
    assert len(kernels) == 10  # G: 2 FC, 2 deconv; trunk: 2 conv, FC; D: FC; Q: 2 FC
    assert len({float(values[0]) for values in kernels}) == 10  # a draw of its own for each layer
