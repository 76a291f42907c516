"""The random ops of abc_tf.data.augment_ops: S8.4 contrast, saturation and crop, the Shapes3D
baseline's hue, and the S5 pose ops (translation, brightness, noise, Sobel, background
painting): identity at amplitude 0, seeded, one draw per image, their ranges."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf
from matplotlib.colors import rgb_to_hsv

from abc_tf.data import augment_ops as augment
from abc_tf.data.shapes3d import scenes as render
from augment_helpers import background_case, face_stack, smooth_stack
from tolerance_helpers import rounding_rtol

SETS_SEED = tf.constant([3, 7], tf.int64)
OTHER_SETS_SEED = tf.constant([4, 7], tf.int64)
SEED = tf.constant([3, 9], tf.int64)
OTHER_SEED = tf.constant([4, 9], tf.int64)
POSE_NAMES = ["translate", "brightness", "gaussian_noise", "salt_pepper", "sobel"]
AMPLITUDE = {"translate": 0.2, "brightness": 0.3, "gaussian_noise": 0.1, "salt_pepper": 0.2, "sobel": 0.5}


# ----------------------------------------------------------------------------- S8.4 (faces, cars)


@pytest.mark.parametrize("name", ["contrast", "saturation", "crop"])
def test_identity_at_zero_and_seeded(name):
    function = augment.AUGMENTATIONS[name]
    images = face_stack()
    np.testing.assert_array_equal(function(images, 0.0, SETS_SEED).numpy(), images.numpy())
    first = function(images, 0.4, SETS_SEED)
    assert first.shape == images.shape and first.dtype == tf.float32
    np.testing.assert_array_equal(first.numpy(), function(images, 0.4, SETS_SEED).numpy())
    assert not np.allclose(first.numpy(), function(images, 0.4, OTHER_SETS_SEED).numpy())
    assert not np.allclose(first.numpy(), images.numpy())
    assert 0.0 <= float(tf.reduce_min(first)) and float(tf.reduce_max(first)) <= 1.0


@pytest.mark.parametrize("name", ["contrast", "saturation", "crop"])
def test_one_draw_per_image(name):
    """Identical images in a stack come out different: the parameter is drawn per image."""
    one = tf.random.stateless_uniform([1, 1, 10, 12, 3], seed=[5, 5])
    images = tf.tile(one, [2, 3, 1, 1, 1])
    out = augment.AUGMENTATIONS[name](images, 0.5, SETS_SEED).numpy().reshape(6, -1)
    assert len({row.tobytes() for row in out}) == 6


def test_contrast_scales_deviations_from_the_mean_within_the_amplitude():
    images = face_stack(low=0.4, high=0.6)  # no clipping at amplitude 0.5
    out = augment.random_contrast(images, 0.5, SETS_SEED).numpy()
    inputs = images.numpy()
    mean_in = inputs.mean(axis=(2, 3), keepdims=True)
    # TensorFlow's and NumPy's float32 means of 10 x 12 pixels in [0.4, 0.6], and the op's few
    # roundings more: rounding_rtol(123) of 0.6.
    tolerance = rounding_rtol(10 * 12 + 3) * 0.6
    np.testing.assert_allclose(out.mean(axis=(2, 3), keepdims=True), mean_in, atol=tolerance)
    deviation_in = (inputs - mean_in).reshape(6, -1)
    deviation_out = (out - mean_in).reshape(6, -1)
    # One factor per image: the output deviations are the input ones times a scalar.
    factor = np.sum(deviation_in * deviation_out, axis=1) / np.sum(deviation_in**2, axis=1)
    np.testing.assert_allclose(
        deviation_out, factor[:, None] * deviation_in, atol=tolerance
    )  # the means' rounding again
    assert np.all((factor >= 0.5 - 1e-4) & (factor <= 1.5 + 1e-4)) and np.std(factor) > 0.05


def test_saturation_keeps_gray_and_one_channel_images():
    gray = tf.tile(face_stack(channels=1), [1, 1, 1, 1, 3])
    # Gray has saturation 0 and the HSV round trip gives back its value: equal.
    np.testing.assert_allclose(
        augment.random_saturation(gray, 0.8, SETS_SEED).numpy(), gray.numpy(), atol=1e-6
    )
    single = face_stack(channels=1)
    np.testing.assert_array_equal(augment.random_saturation(single, 0.8, SETS_SEED).numpy(), single.numpy())
    # Luma is unchanged when nothing clips.
    images = face_stack(low=0.45, high=0.55)
    out = augment.random_saturation(images, 0.5, SETS_SEED).numpy()
    weights = np.array([0.2989, 0.5870, 0.1140]) / 0.9999
    # float32 HSV round trips of values <= 0.55, then 3 products: about 20 roundings of 0.55, 3e-6.
    np.testing.assert_allclose(out @ weights, images.numpy() @ weights, atol=1e-5)


def test_crop_keeps_at_least_one_minus_amplitude_of_each_side():
    width = 33
    ramp = np.tile(np.linspace(0.0, 1.0, width, dtype=np.float32)[None, :, None], (width, 1, 1))
    images = tf.constant(np.broadcast_to(ramp, (4, 5, width, width, 1)).copy())
    amplitude = 0.3
    out = augment.random_crop(images, amplitude, SETS_SEED).numpy().reshape(20, width, width)
    left, right = out[:, 0, 0], out[:, 0, -1]
    span = right - left
    assert np.all(left >= -1e-6) and np.all(right <= 1 + 1e-6)
    assert np.all(span >= 1 - amplitude - 1e-5) and np.all(span <= 1 + 1e-6)
    assert np.std(span) > 0.01  # sizes vary between images
    flat = tf.fill([2, 2, 8, 8, 3], 0.25)
    # Bilinear weights summing to 1, each rounded: 4 roundings of 0.25, 1.2e-7.
    np.testing.assert_allclose(augment.random_crop(flat, 0.5, SETS_SEED).numpy(), 0.25, atol=1e-6)


def test_amplitude_out_of_range_names_the_op():
    with pytest.raises(ValueError, match="contrast amplitude"):
        augment.random_contrast(face_stack(), -0.1, SETS_SEED)
    with pytest.raises(ValueError, match="crop amplitude"):
        augment.check_amplitude("crop", 1.0)
    assert augment.check_amplitude("saturation", 1.0) == 1.0 and augment.check_amplitude("sobel", 7.0) == 7.0


# ----------------------------------------------------------------------------- hue (Shapes3D baseline)


@pytest.mark.slow
def test_random_hue_draws_one_shift_per_image():
    sizes = (10, 10, 10, 8, 4, 15)  # the Shapes3D factor grid
    images = tf.constant(render.render(np.random.default_rng(2).integers(0, sizes, size=(6, 6))))
    out = augment.random_hue(images, 0.5, tf.constant([1, 2], tf.int64)).numpy()
    before, after = rgb_to_hsv(images.numpy() / 255.0), rgb_to_hsv(out)
    shifts = []
    for b, a in zip(before, after):
        saturated = b[..., 1] > 0.5
        shift = (a[saturated, 0] - b[saturated, 0]) % 1.0
        # One shift per image (circular spread tiny), within [-0.5, 0.5].
        assert np.abs((shift - shift[0] + 0.5) % 1.0 - 0.5).max() < 0.01
        shifts.append(shift[0])
    assert np.unique(np.round(shifts, 3)).size == 6
    np.testing.assert_allclose(
        augment.random_hue(images, 0.0, tf.constant([1, 2])).numpy(), images.numpy() / 255.0
    )
    with pytest.raises(ValueError, match="hue amplitude"):
        augment.random_hue(images, 0.7, tf.constant([1, 2]))


# ----------------------------------------------------------------------------- pose (S5)


@pytest.mark.parametrize("name", POSE_NAMES)
def test_shape_range_identity_and_seed(name):
    function = augment.AUGMENTATIONS[name]
    images = smooth_stack()
    np.testing.assert_array_equal(function(images, 0.0, SEED).numpy(), images.numpy())
    out = function(images, AMPLITUDE[name], SEED)
    assert out.shape == images.shape and out.dtype == tf.float32
    assert 0.0 <= float(tf.reduce_min(out)) and float(tf.reduce_max(out)) <= 1.0
    np.testing.assert_array_equal(out.numpy(), function(images, AMPLITUDE[name], SEED).numpy())
    assert not np.allclose(out.numpy(), function(images, AMPLITUDE[name], OTHER_SEED).numpy())
    assert not np.allclose(out.numpy(), images.numpy())


@pytest.mark.parametrize("name", POSE_NAMES)
def test_parameter_drawn_per_image(name):
    one = smooth_stack()[:1, :1]
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
    np.testing.assert_allclose(
        augment.random_translate(flat, 0.3, SEED).numpy(), 0.4, atol=1e-6
    )  # 4 roundings of 0.4


def test_translate_rejects_bad_arguments():
    with pytest.raises(ValueError, match="translate"):
        augment.random_translate(smooth_stack(), 1.0, SEED)
    with pytest.raises(ValueError, match="fill_mode"):
        augment.random_translate(smooth_stack(), 0.1, SEED, fill_mode="mirror")


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
