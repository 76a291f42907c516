"""S8.4 augmentations of abc_tf.augment: contrast, saturation, crop, parsing, double augmentation."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from abc_tf import augment

SEED = tf.constant([3, 7], tf.int64)
OTHER_SEED = tf.constant([4, 7], tf.int64)


def stack(channels: int = 3, low: float = 0.0, high: float = 1.0) -> tf.Tensor:
    """Random images [P=2, S=3, 10, 12, C] in [low, high]."""
    return tf.random.stateless_uniform([2, 3, 10, 12, channels], seed=[1, 2], minval=low, maxval=high)


@pytest.mark.parametrize("name", ["contrast", "saturation", "crop"])
def test_identity_at_zero_and_seeded(name):
    function = augment.AUGMENTATIONS[name]
    images = stack()
    np.testing.assert_array_equal(function(images, 0.0, SEED).numpy(), images.numpy())
    first = function(images, 0.4, SEED)
    assert first.shape == images.shape and first.dtype == tf.float32
    np.testing.assert_array_equal(first.numpy(), function(images, 0.4, SEED).numpy())
    assert not np.allclose(first.numpy(), function(images, 0.4, OTHER_SEED).numpy())
    assert not np.allclose(first.numpy(), images.numpy())
    assert 0.0 <= float(tf.reduce_min(first)) and float(tf.reduce_max(first)) <= 1.0


@pytest.mark.parametrize("name", ["contrast", "saturation", "crop"])
def test_one_draw_per_image(name):
    """Identical images in a stack come out different: the parameter is drawn per image."""
    one = tf.random.stateless_uniform([1, 1, 10, 12, 3], seed=[5, 5])
    images = tf.tile(one, [2, 3, 1, 1, 1])
    out = augment.AUGMENTATIONS[name](images, 0.5, SEED).numpy().reshape(6, -1)
    assert len({row.tobytes() for row in out}) == 6


def test_contrast_scales_deviations_from_the_mean_within_the_amplitude():
    images = stack(low=0.4, high=0.6)  # no clipping at amplitude 0.5
    out = augment.random_contrast(images, 0.5, SEED).numpy()
    inputs = images.numpy()
    mean_in = inputs.mean(axis=(2, 3), keepdims=True)
    np.testing.assert_allclose(out.mean(axis=(2, 3), keepdims=True), mean_in, atol=1e-5)
    deviation_in = (inputs - mean_in).reshape(6, -1)
    deviation_out = (out - mean_in).reshape(6, -1)
    # One factor per image: the output deviations are the input ones times a scalar.
    factor = np.sum(deviation_in * deviation_out, axis=1) / np.sum(deviation_in**2, axis=1)
    np.testing.assert_allclose(deviation_out, factor[:, None] * deviation_in, atol=1e-5)
    assert np.all((factor >= 0.5 - 1e-4) & (factor <= 1.5 + 1e-4)) and np.std(factor) > 0.05


def test_saturation_keeps_gray_and_one_channel_images():
    gray = tf.tile(stack(channels=1), [1, 1, 1, 1, 3])
    np.testing.assert_allclose(augment.random_saturation(gray, 0.8, SEED).numpy(), gray.numpy(), atol=1e-6)
    single = stack(channels=1)
    np.testing.assert_array_equal(augment.random_saturation(single, 0.8, SEED).numpy(), single.numpy())
    # Luma is unchanged when nothing clips.
    images = stack(low=0.45, high=0.55)
    out = augment.random_saturation(images, 0.5, SEED).numpy()
    weights = np.array([0.2989, 0.5870, 0.1140]) / 0.9999
    np.testing.assert_allclose(out @ weights, images.numpy() @ weights, atol=1e-5)


def test_crop_keeps_at_least_one_minus_amplitude_of_each_side():
    width = 33
    ramp = np.tile(np.linspace(0.0, 1.0, width, dtype=np.float32)[None, :, None], (width, 1, 1))
    images = tf.constant(np.broadcast_to(ramp, (4, 5, width, width, 1)).copy())
    amplitude = 0.3
    out = augment.random_crop(images, amplitude, SEED).numpy().reshape(20, width, width)
    left, right = out[:, 0, 0], out[:, 0, -1]
    span = right - left
    assert np.all(left >= -1e-6) and np.all(right <= 1 + 1e-6)
    assert np.all(span >= 1 - amplitude - 1e-5) and np.all(span <= 1 + 1e-6)
    assert np.std(span) > 0.01  # sizes vary between images
    flat = tf.fill([2, 2, 8, 8, 3], 0.25)
    np.testing.assert_allclose(augment.random_crop(flat, 0.5, SEED).numpy(), 0.25, atol=1e-6)


def test_amplitude_ranges_and_spec_parsing():
    assert augment.parse_augmentations("") == ()
    assert augment.parse_augmentations(" contrast:0.3, crop:0.2 ") == (("contrast", 0.3), ("crop", 0.2))
    for spec, message in [
        ("blur:0.1", "unknown augmentation 'blur'"),
        ("crop", "needs an amplitude"),
        ("crop:big", "not a number"),
        ("crop:0.1,crop:0.2", "twice"),
    ]:
        with pytest.raises(ValueError, match=message):
            augment.parse_augmentations(spec)
    with pytest.raises(ValueError, match="crop amplitude"):
        augment.validate_augmentations(augment.parse_augmentations("crop:1.0"))
    with pytest.raises(ValueError, match="contrast amplitude"):
        augment.random_contrast(stack(), -0.1, SEED)


def test_double_augment_gives_independent_views():
    batch = {"set_a": tf.cast(stack() * 255, tf.uint8), "set_b": tf.cast(stack() * 255, tf.uint8), "other": tf.constant(1)}
    spec = augment.parse_augmentations("contrast:0.3,saturation:0.3,crop:0.2")
    out = augment.double_augment(batch, spec, SEED)
    assert sorted(out) == ["other", "set_a", "set_a_view2", "set_b", "set_b_view2"]
    assert out["set_a"].dtype == tf.float32
    assert not np.allclose(out["set_a"].numpy(), out["set_a_view2"].numpy())
    assert not np.allclose(out["set_a"].numpy(), out["set_b"].numpy())  # same pixels, other draws
    single = augment.double_augment(batch, spec, SEED, double=False)
    assert "set_a_view2" not in single
    # Inside a graph (as in tf.data) it gives the same result.
    graph = tf.function(lambda b: augment.double_augment(b, spec, SEED))(batch)
    np.testing.assert_allclose(graph["set_b_view2"].numpy(), out["set_b_view2"].numpy(), atol=1e-6)
