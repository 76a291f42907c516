"""The S5 pose encoders (models.build "s5", "s5_small"): ResNet50V2 to conv4 with the S5 head,
counted by hand; clear errors when weights cannot load."""

from __future__ import annotations

import keras
import numpy as np
import pytest

import models


def resnet50v2_to_conv4_parameters() -> int:
    """Parameters of ResNet50V2 up to conv4_block6_out, by hand (He et al. 2016, identity
    mappings; keras.applications layout): the stem convolution has a bias and no batch norm;
    each block is batch norm + ReLU on its input (pre-activation), 1x1 and 3x3 convolutions
    without biases, each followed by batch norm, a final 1x1 convolution with a bias, and a 1x1
    projection shortcut with a bias in a stage's first block. Batch norm: 4 per channel."""

    def block(c_in: int, mid: int, shortcut: bool) -> int:
        out = 4 * mid
        total = 4 * c_in + c_in * mid + 4 * mid + 9 * mid * mid + 4 * mid + (mid * out + out)
        return total + (c_in * out + out if shortcut else 0)

    def stage(c_in: int, mid: int, blocks: int) -> int:
        return block(c_in, mid, True) + sum(block(4 * mid, mid, False) for _ in range(blocks - 1))

    stem = 7 * 7 * 3 * 64 + 64
    return stem + stage(64, 64, 3) + stage(256, 128, 4) + stage(512, 256, 6)


@pytest.mark.slow
def test_s5_is_resnet50v2_to_conv4_with_the_s5_head():
    assert resnet50v2_to_conv4_parameters() == 8_573_440
    encoder = models.build("s5", embedding_dim=64, input_shape=(128, 128, 3))
    assert encoder.output_shape == (None, 64)
    backbone = keras.Model(encoder.input, encoder.get_layer("backbone").output)
    # Supplement S8.5 and the ICLR text: 16,384-d features at 128 px (output stride 32).
    assert backbone.output_shape == (None, 4, 4, 1024)
    assert backbone.count_params() == resnet50v2_to_conv4_parameters()
    head = (3 * 3 * 1024 * 256 + 256) + (256 * 128 + 128) + (128 * 64 + 64)
    assert encoder.count_params() == resnet50v2_to_conv4_parameters() + head
    assert encoder.get_layer("hidden").activation.__name__ == "tanh"
    # Pre-activation blocks: the features are a sum, not a ReLU output.
    assert encoder.get_layer("conv4_block6_out").__class__.__name__ == "Add"
    out = encoder(np.random.default_rng(0).uniform(size=(2, 128, 128, 3)).astype(np.float32))
    assert out.shape == (2, 64)
    # [0, 1] images reach ResNet50V2 in its own range [-1, 1].
    preprocess = keras.Model(encoder.input, encoder.get_layer("resnet_preprocess").output)
    pixels = np.broadcast_to(np.array([0.0, 0.5, 1.0], np.float32), (1, 128, 128, 3))
    np.testing.assert_allclose(preprocess(pixels)[0, 0, 0], [-1.0, 0.0, 1.0])
    assert models.build("s5", input_shape=(65, 65, 3)).get_layer("backbone").output.shape[1:] == (3, 3, 1024)
    with pytest.raises(ValueError, match="at least 65"):
        models.build("s5", input_shape=(64, 64, 3))


@pytest.mark.slow
def test_s5_weights_failure_is_a_clear_error(tmp_path, monkeypatch):
    with pytest.raises(ValueError, match="Cannot load ResNet50V2 weights"):
        models.build("s5", input_shape=(65, 65, 3), weights=str(tmp_path / "missing.weights.h5"))
    # Offline, weights="imagenet" fails inside Keras' download; the message says what to do.
    from keras.src.applications import resnet

    def no_network(*args, **kwargs):
        raise Exception(
            "URL fetch failure on https://storage.googleapis.com/...: None -- [Errno -3] no network"
        )

    monkeypatch.setattr(resnet.file_utils, "get_file", no_network)
    with pytest.raises(ValueError, match="Cannot load ResNet50V2 weights 'imagenet' .*internet needed"):
        models.build("s5", input_shape=(65, 65, 3), weights="imagenet")


def test_s5_small_has_the_s5_head_and_a_backbone_layer():
    encoder = models.build("s5_small", embedding_dim=16, input_shape=(32, 32, 3))
    assert encoder.output_shape == (None, 16)
    assert encoder.get_layer("backbone").output.shape[1:] == (3, 3, 128)
    head = (3 * 3 * 128 * 256 + 256) + (256 * 128 + 128) + (128 * 16 + 16)
    trunk = sum(3 * 3 * i * o + o + 4 * o for i, o in [(3, 32), (32, 32), (32, 64), (64, 64), (64, 128)])
    assert encoder.count_params() == trunk + head


@pytest.mark.parametrize("side, extra, features", [(48, 1, 3), (64, 1, 5), (128, 2, 6)])
def test_s5_small_adds_strided_layers_so_the_head_sees_most_of_a_larger_image(side, extra, features):
    # 'valid' 3x3: 64 -> 62 -> 30 -> 28 -> 13 -> 11, then Conv128 s2 -> 5; one more would give 2.
    encoder = models.build("s5_small", embedding_dim=16, input_shape=(side, side, 3))
    assert encoder.get_layer("backbone").output.shape[1:] == (features, features, 128)
    convs = [layer for layer in encoder.layers if layer.name.startswith("conv")]
    assert len(convs) == 5 + extra and all(
        layer.strides == (2, 2) and layer.filters == 128 for layer in convs[5:]
    )
