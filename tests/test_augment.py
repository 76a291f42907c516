"""Pose augmentations of abc_tf.augment (supplement S5): translation, brightness, noise, Sobel,
background painting, and their combination pose_augment."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from abc_tf import augment

SEED = tf.constant([3, 9], tf.int64)
OTHER_SEED = tf.constant([4, 9], tf.int64)
POSE_NAMES = ["translate", "brightness", "gaussian_noise", "salt_pepper", "sobel"]
AMPLITUDE = {"translate": 0.2, "brightness": 0.3, "gaussian_noise": 0.1, "salt_pepper": 0.2, "sobel": 0.5}


def stack(channels: int = 3) -> tf.Tensor:
    """Smooth random images [P=2, S=3, 12, 12, C] in [0.1, 0.9] (edges for Sobel to find)."""
    coarse = tf.random.stateless_uniform([6, 4, 4, channels], seed=[1, 2], minval=0.1, maxval=0.9)
    return tf.reshape(tf.image.resize(coarse, [12, 12], method="bilinear"), [2, 3, 12, 12, channels])


@pytest.mark.parametrize("name", POSE_NAMES)
def test_shape_range_identity_and_seed(name):
    function = augment.AUGMENTATIONS[name]
    images = stack()
    np.testing.assert_array_equal(function(images, 0.0, SEED).numpy(), images.numpy())
    out = function(images, AMPLITUDE[name], SEED)
    assert out.shape == images.shape and out.dtype == tf.float32
    assert 0.0 <= float(tf.reduce_min(out)) and float(tf.reduce_max(out)) <= 1.0
    np.testing.assert_array_equal(out.numpy(), function(images, AMPLITUDE[name], SEED).numpy())
    assert not np.allclose(out.numpy(), function(images, AMPLITUDE[name], OTHER_SEED).numpy())
    assert not np.allclose(out.numpy(), images.numpy())


@pytest.mark.parametrize("name", POSE_NAMES)
def test_parameter_drawn_per_image(name):
    one = stack()[:1, :1]
    images = tf.tile(one, [2, 3, 1, 1, 1])
    out = augment.AUGMENTATIONS[name](images, AMPLITUDE[name], SEED).numpy().reshape(6, -1)
    assert len({row.tobytes() for row in out}) == 6


def test_translate_moves_content_by_at_most_the_amplitude():
    """A single bright pixel moves by at most a * size pixels (the box shift), and does move."""
    size, amplitude = 20, 0.1
    image = np.zeros((16, size, size, 1), np.float32)
    image[:, 10, 10, 0] = 1.0
    out = augment.random_translate(image, amplitude, SEED, fill_mode="constant").numpy()
    rows, cols = np.meshgrid(np.arange(size), np.arange(size), indexing="ij")
    weight = out[..., 0].sum(axis=(1, 2))
    centre_r = (out[..., 0] * rows).sum(axis=(1, 2)) / weight
    centre_c = (out[..., 0] * cols).sum(axis=(1, 2)) / weight
    shift = np.stack([centre_r - 10, centre_c - 10], axis=1)
    assert np.all(np.abs(shift) <= amplitude * size + 1e-4)
    assert np.std(shift) > 0.3  # shifts differ between images
    # Nearest fill replicates the edge of a constant image: it stays constant.
    flat = np.full((4, size, size, 3), 0.4, np.float32)
    np.testing.assert_allclose(augment.random_translate(flat, 0.3, SEED).numpy(), 0.4, atol=1e-6)


def test_translate_rejects_bad_arguments():
    with pytest.raises(ValueError, match="translate"):
        augment.random_translate(stack(), 1.0, SEED)
    with pytest.raises(ValueError, match="fill_mode"):
        augment.random_translate(stack(), 0.1, SEED, fill_mode="mirror")


def test_brightness_is_a_constant_shift_per_image():
    images = tf.fill([5, 8, 8, 3], 0.5)
    out = augment.random_brightness(images, 0.3, SEED).numpy()
    for image in out:
        assert np.ptp(image) < 1e-6  # one delta for every pixel of an image
        assert abs(image[0, 0, 0] - 0.5) <= 0.3 + 1e-6


def test_salt_and_pepper_sets_whole_pixels_to_black_or_white():
    images = tf.fill([4, 30, 30, 3], 0.5)
    out = augment.salt_and_pepper(images, 0.5, SEED).numpy()
    changed = np.any(out != 0.5, axis=-1)
    assert 0 < changed.mean() < 0.5  # rate p ~ U[0, 0.5] per image
    hit = out[changed]
    assert np.all((hit == 0.0) | (hit == 1.0))
    assert np.all(hit.min(axis=-1) == hit.max(axis=-1))  # all channels of a pixel together


def test_sobel_adds_only_at_edges():
    images = np.zeros((3, 12, 12, 3), np.float32)
    images[:, :, 6:] = 0.5  # one vertical edge
    out = augment.add_sobel(images, 1.0, SEED).numpy()
    np.testing.assert_array_equal(out[:, :, :4], images[:, :, :4])  # flat far from the edge
    np.testing.assert_array_equal(out[:, :, 8:], images[:, :, 8:])
    assert np.all(out[:, :, 5:7] >= images[:, :, 5:7]) and np.any(out[:, :, 5:7] > images[:, :, 5:7])


def test_gaussian_noise_has_the_drawn_spread():
    images = tf.fill([64, 16, 16, 3], 0.5)
    out = augment.gaussian_noise(images, 0.1, SEED).numpy()
    sigma = out.reshape(64, -1).std(axis=1)
    assert sigma.max() <= 0.1 * 1.15 and sigma.min() >= 0.0
    assert 0.03 < sigma.mean() < 0.07  # sigma ~ U[0, 0.1]


def background_case() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Renders [2, 3, 10, 10, 3] (premultiplied) with a square mask; a pool of 5 backgrounds."""
    rng = np.random.default_rng(0)
    alpha = np.zeros((2, 3, 10, 10, 1), np.float32)
    alpha[:, :, 3:7, 2:8] = 1.0
    alpha[:, :, 2, 2:8] = 0.5  # a soft edge row
    rgb = rng.uniform(0.2, 0.8, (2, 3, 10, 10, 3)).astype(np.float32) * alpha
    pool = rng.integers(0, 256, (5, 24, 20, 3), dtype=np.uint8)
    return rgb, alpha, pool


def test_paint_background_touches_only_pixels_outside_the_mask():
    rgb, alpha, pool = background_case()
    out = augment.paint_background(rgb, alpha, pool, 1.0, SEED).numpy()
    assert out.shape == rgb.shape
    inside = alpha[..., 0] == 1.0
    np.testing.assert_array_equal(out[inside], rgb[inside])
    outside = alpha[..., 0] == 0.0
    assert np.mean(np.any(out[outside] != rgb[outside], axis=-1)) > 0.9
    assert 0.0 <= out.min() and out.max() <= 1.0
    # Soft edge: x + (1 - alpha) * crop, so it changes by at most half a background.
    edge = alpha[..., 0] == 0.5
    assert np.all(np.abs(out[edge] - rgb[edge]) <= 0.5 + 1e-6)
    # Identity at amplitude 0 (no painting).
    np.testing.assert_array_equal(augment.paint_background(rgb, alpha, pool, 0.0, SEED).numpy(), rgb)


def test_paint_background_crops_come_from_the_pool():
    """With a pool of constant-colour images, every painted pixel is one of the pool colours."""
    colours = np.array([[255, 0, 0], [0, 255, 0], [0, 0, 255]], np.uint8)
    pool = np.broadcast_to(colours[:, None, None, :], (3, 16, 16, 3)).copy()
    rgb = np.zeros((8, 10, 10, 3), np.float32)
    alpha = np.zeros((8, 10, 10, 1), np.float32)
    out = augment.paint_background(rgb, alpha, pool, 1.0, SEED).numpy()
    first = out[:, 0, 0, :]
    assert np.all(np.isclose(out, first[:, None, None, :]))  # one background per image
    assert all(any(np.allclose(c, colour / 255.0) for colour in colours) for c in first)
    assert len({tuple(c) for c in np.round(first, 3)}) > 1  # backgrounds drawn per image


def test_pose_augment_identity_and_real_images_unpainted():
    rgb, alpha, pool = background_case()
    rgba = np.concatenate([rgb, alpha], -1)
    is_real = np.array([[False, True, False], [True, False, False]])
    # No translation, no colour changes, no backgrounds: RGB comes back unchanged.
    out = augment.pose_augment(rgba, is_real, None, 0.0, 0.0, SEED).numpy()
    np.testing.assert_array_equal(out, rgb)
    # Painting changes renders outside their mask; photos have alpha 1 and are left alone.
    photos = rgba.copy()
    photos[is_real, ..., 3] = 1.0
    out = augment.pose_augment(photos, is_real, pool, 0.0, 0.0, SEED).numpy()
    np.testing.assert_array_equal(out[is_real], photos[is_real][..., :3])
    assert not np.allclose(out[~is_real], photos[~is_real][..., :3])
    # Full augmentation: shape and range.
    out = augment.pose_augment(photos, is_real, pool, 0.1, 1.0, SEED).numpy()
    assert out.shape == rgb.shape and 0.0 <= out.min() and out.max() <= 1.0


def test_spec_strings_accept_the_pose_augmentations():
    pairs = augment.parse_augmentations("translate:0.1,brightness:0.2,sobel:0.3,gaussian_noise:0.02,salt_pepper:0.01")
    augment.validate_augmentations(pairs)
    out = augment.augment_stack(stack(), pairs, SEED)
    assert out.shape == stack().shape
    with pytest.raises(ValueError, match="translate"):
        augment.validate_augmentations([("translate", 1.5)])
