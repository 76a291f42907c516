"""Random per-image augmentations of image stacks (docs/PAPERS.md section 1; supplement S5, S8.4).

Every function takes float32 images ``[..., H, W, C]`` in [0, 1], typically ``[P, S, H, W, C]``.
It also takes a non-negative ``amplitude`` and a stateless int ``seed`` of shape [2]. It draws
one random parameter per image and returns the same shape and dtype. Amplitude 0 is the identity.
The same seed gives the same result, so a pipeline seeded from the config is reproducible.
``AUGMENTATIONS`` names them for ``--data.augmentations``; :mod:`abc_tf.data.augment` composes
them.

Faces and cars (S8.4): contrast, saturation, crop. The Shapes3D baseline: hue. Pose (S5):
bounding-box translation, brightness, normal and salt-and-pepper noise, an added Sobel copy, and
painted backgrounds.
"""

from __future__ import annotations

from typing import Callable

import tensorflow as tf

# ITU-R BT.601 luma weights (those of tf.image.rgb_to_grayscale), scaled to sum to exactly 1
# so that gray pixels are fixed points of the saturation change.
_LUMA_WEIGHTS = tuple(w / 0.9999 for w in (0.2989, 0.5870, 0.1140))


def to_float(images: tf.Tensor) -> tf.Tensor:
    """uint8 0..255 -> float32 in [0, 1]; float images are only cast."""
    images = tf.convert_to_tensor(images)
    if images.dtype == tf.uint8:
        return tf.cast(images, tf.float32) / 255.0
    return tf.cast(images, tf.float32)


def flatten_stack(images: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
    """[..., H, W, C] -> [B, H, W, C] and the original shape, so per-image ops see one batch axis."""
    images = tf.convert_to_tensor(images)
    shape = tf.shape(images)
    flat = tf.reshape(images, tf.concat([[-1], shape[-3:]], axis=0))
    return flat, shape


def _per_image_uniform(flat: tf.Tensor, low: float, high: float, seed: tf.Tensor) -> tf.Tensor:
    """One uniform draw per image of a [B, H, W, C] batch, shaped [B, 1, 1, 1] to broadcast."""
    count = tf.shape(flat)[0]
    values = tf.random.stateless_uniform([count], seed=seed, minval=low, maxval=high, dtype=tf.float32)
    return values[:, tf.newaxis, tf.newaxis, tf.newaxis]


# Amplitudes must lie in [0, bound): the bound of each op by name (none: any amplitude >= 0).
# 1 + 1e-9 admits 1 itself (e.g. saturation 1: full desaturation possible).
AMPLITUDE_BOUNDS = {
    "contrast": 1.0,
    "saturation": 1.0 + 1e-9,
    "crop": 1.0,
    "hue": 0.5 + 1e-9,
    "translate": 1.0,
    "brightness": 1.0 + 1e-9,
    "salt_pepper": 1.0 + 1e-9,
    "paint_background": 1.0 + 1e-9,
}


def check_amplitude(name: str, amplitude: float) -> float:
    """``amplitude`` as a float. ValueError when it lies outside op ``name``'s range."""
    amplitude = float(amplitude)
    upper = AMPLITUDE_BOUNDS.get(name)
    if not amplitude >= 0.0 or (upper is not None and amplitude >= upper):
        bound = f" and below {upper}" if upper is not None else ""
        raise ValueError(f"{name} amplitude must be >= 0{bound}, got {amplitude}.")
    return amplitude


def random_contrast(images: tf.Tensor, amplitude: float, seed: tf.Tensor) -> tf.Tensor:
    """Random contrast: ``(x - mean) * c + mean``, c ~ U[1 - a, 1 + a] per image, mean per image and
    channel, clipped to [0, 1]. ``a`` lies in [0, 1), so the factor stays positive."""
    amplitude = check_amplitude("contrast", amplitude)
    if amplitude == 0.0:
        return tf.convert_to_tensor(images)
    flat, shape = flatten_stack(images)
    factor = _per_image_uniform(flat, 1.0 - amplitude, 1.0 + amplitude, seed)
    mean = tf.reduce_mean(flat, axis=[1, 2], keepdims=True)
    out = tf.clip_by_value((flat - mean) * factor + mean, 0.0, 1.0)
    return tf.reshape(out, shape)


def random_saturation(images: tf.Tensor, amplitude: float, seed: tf.Tensor) -> tf.Tensor:
    """Random saturation: ``gray + s * (x - gray)`` with s ~ U[1 - a, 1 + a] per image.

    ``gray`` is the image's luma. One-channel images carry no colour and are returned unchanged,
    so a faces spec may name saturation harmlessly. ``a`` lies in [0, 1]; s = 0 is full
    desaturation.
    """
    amplitude = check_amplitude("saturation", amplitude)
    images = tf.convert_to_tensor(images)
    if amplitude == 0.0 or images.shape[-1] == 1:
        return images
    if images.shape[-1] != 3:
        raise ValueError(f"random_saturation expects 1 or 3 channels, got shape {images.shape}.")
    flat, shape = flatten_stack(images)
    factor = _per_image_uniform(flat, 1.0 - amplitude, 1.0 + amplitude, seed)
    gray = tf.reduce_sum(flat * tf.constant(_LUMA_WEIGHTS, tf.float32), axis=-1, keepdims=True)
    out = tf.clip_by_value(gray + factor * (flat - gray), 0.0, 1.0)
    return tf.reshape(out, shape)


def random_crop(images: tf.Tensor, amplitude: float, seed: tf.Tensor) -> tf.Tensor:
    """Random crop, resized back to H x W by bilinear sampling: per image, a fraction f ~ U[1 - a, 1]
    of the height and, drawn apart, of the width, at a uniform position. ``a`` lies in [0, 1)."""
    amplitude = check_amplitude("crop", amplitude)
    if amplitude == 0.0:
        return tf.convert_to_tensor(images)
    flat, shape = flatten_stack(images)
    count = tf.shape(flat)[0]
    # Four draws per image: two box sizes, two offsets (fractions of the free margin).
    draws = tf.random.stateless_uniform([count, 4], seed=seed, dtype=tf.float32)
    size = 1.0 - amplitude * draws[:, :2]  # (height, width) fractions in [1 - a, 1]
    start = (1.0 - size) * draws[:, 2:]
    # [y1, x1, y2, x2] in normalised coordinates, as crop_and_resize wants them.
    boxes = tf.stack([start[:, 0], start[:, 1], start[:, 0] + size[:, 0], start[:, 1] + size[:, 1]], axis=1)
    out = tf.image.crop_and_resize(
        flat, boxes, tf.range(count), crop_size=tf.shape(flat)[1:3], method="bilinear"
    )
    return tf.reshape(tf.cast(out, flat.dtype), shape)


def random_hue(images: tf.Tensor, amplitude: float, seed: tf.Tensor) -> tf.Tensor:
    """Random hue rotation by d ~ U[-a, a] per image: ``tf.image.random_hue(x, a)`` per image.

    The Shapes3D baseline (docs/PAPERS.md section 1, Fig. 3c) uses a = 0.5, i.e. any hue. Hue is
    a fraction of the colour circle and wraps around; saturation and value are kept.
    ``tf.image.random_hue`` draws one delta per batch, so the rotation goes through HSV here.
    ``a`` lies in [0, 0.5]. Needs 3 channels.
    """
    amplitude = check_amplitude("hue", amplitude)
    images = to_float(images)  # uint8 input is accepted too (as abc_tf.methods.base.to_float_images does)
    if amplitude == 0.0:
        return images
    if images.shape[-1] != 3:
        raise ValueError(f"random_hue expects 3 channels, got shape {images.shape}.")
    flat, shape = flatten_stack(images)
    delta = _per_image_uniform(flat, -amplitude, amplitude, seed)[..., 0]  # [B, 1, 1]
    hsv = tf.image.rgb_to_hsv(flat)
    hue = tf.math.floormod(hsv[..., 0] + delta, 1.0)
    out = tf.image.hsv_to_rgb(tf.stack([hue, hsv[..., 1], hsv[..., 2]], axis=-1))
    return tf.reshape(tf.clip_by_value(out, 0.0, 1.0), shape)


# ----------------------------------------------------------------------------- pose (supplement S5)

_FILL_MODES = ("nearest", "constant", "reflect", "wrap")


def random_translate(
    images: tf.Tensor, amplitude: float, seed: tf.Tensor, fill_mode: str = "nearest"
) -> tf.Tensor:
    """Random translation of the bounding box by up to ``a`` of its width and height (S5).

    The images are tight crops. Moving the crop window by (dx, dy) = (u W, v H), u, v ~ U[-a, a]
    per image, shifts the content by (-dx, -dy). Sampling is bilinear. ``a`` lies in [0, 1).
    ``fill_mode`` fills pixels from outside the crop:
      - "nearest": edge pixels, for photos whose surroundings are unknown;
      - "constant": zeros, transparent for RGBA renders whose background is painted later;
      - "reflect" or "wrap".
    """
    amplitude = check_amplitude("translate", amplitude)
    if fill_mode not in _FILL_MODES:
        raise ValueError(f"random_translate: fill_mode must be one of {_FILL_MODES}, got {fill_mode!r}.")
    images = tf.convert_to_tensor(images)
    if amplitude == 0.0:
        return images
    flat, shape = flatten_stack(images)
    flat = tf.cast(flat, tf.float32)
    count = tf.shape(flat)[0]
    size = tf.cast(tf.shape(flat)[1:3], tf.float32)  # (H, W)
    shift = (
        tf.random.stateless_uniform([count, 2], seed=seed, minval=-amplitude, maxval=amplitude) * size[::-1]
    )
    # Projective transform rows map output (x, y) to input (x + dx, y + dy).
    ones, zeros = tf.ones([count]), tf.zeros([count])
    transforms = tf.stack([ones, zeros, shift[:, 0], zeros, ones, shift[:, 1], zeros, zeros], axis=1)
    out = tf.raw_ops.ImageProjectiveTransformV3(
        images=flat,
        transforms=transforms,
        output_shape=tf.shape(flat)[1:3],
        fill_value=0.0,
        interpolation="BILINEAR",
        fill_mode=fill_mode.upper(),
    )
    return tf.reshape(tf.cast(out, images.dtype), shape)


def random_brightness(images: tf.Tensor, amplitude: float, seed: tf.Tensor) -> tf.Tensor:
    """Adds d ~ U[-a, a] to every pixel of an image, clipped to [0, 1]."""
    amplitude = check_amplitude("brightness", amplitude)
    if amplitude == 0.0:
        return tf.convert_to_tensor(images)
    flat, shape = flatten_stack(images)
    out = tf.clip_by_value(flat + _per_image_uniform(flat, -amplitude, amplitude, seed), 0.0, 1.0)
    return tf.reshape(out, shape)


def _level_and_pixel_seed(flat: tf.Tensor, amplitude: float, seed: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
    """A noise level per image, U[0, amplitude] shaped [B, 1, 1, 1], and a seed for the per-pixel
    draws.
    """
    seeds = tf.random.experimental.stateless_split(tf.cast(seed, tf.int64), num=2)
    return _per_image_uniform(flat, 0.0, amplitude, seeds[0]), seeds[1]


def gaussian_noise(images: tf.Tensor, amplitude: float, seed: tf.Tensor) -> tf.Tensor:
    """Additive per-pixel normal noise of a std drawn per image from U[0, a], clipped to [0, 1]."""
    amplitude = check_amplitude("gaussian_noise", amplitude)
    if amplitude == 0.0:
        return tf.convert_to_tensor(images)
    flat, shape = flatten_stack(images)
    sigma, pixel_seed = _level_and_pixel_seed(flat, amplitude, seed)
    noise = tf.random.stateless_normal(tf.shape(flat), seed=pixel_seed)
    return tf.reshape(tf.clip_by_value(flat + sigma * noise, 0.0, 1.0), shape)


def salt_and_pepper(images: tf.Tensor, amplitude: float, seed: tf.Tensor) -> tf.Tensor:
    """Salt-and-pepper noise with a rate p ~ U[0, a] per image. ``a`` lies in [0, 1].

    Each pixel turns black in all channels with probability p/2, and white with probability p/2.
    """
    amplitude = check_amplitude("salt_pepper", amplitude)
    if amplitude == 0.0:
        return tf.convert_to_tensor(images)
    flat, shape = flatten_stack(images)
    rate, pixel_seed = _level_and_pixel_seed(flat, amplitude, seed)
    draw = tf.random.stateless_uniform(tf.concat([tf.shape(flat)[:3], [1]], 0), seed=pixel_seed)
    out = tf.where(draw < rate / 2, 0.0, tf.where(draw > 1.0 - rate / 2, 1.0, flat))
    return tf.reshape(out, shape)


def add_sobel(images: tf.Tensor, amplitude: float, seed: tf.Tensor) -> tf.Tensor:
    """Adds a scaled Sobel-filtered copy for edge enhancement (S5): ``x + s |grad x| / 4``, s ~ U[0, a],
    clipped to [0, 1]. The kernels' absolute weights sum to 4, so ``|grad x| / 4`` is at most sqrt(2)."""
    amplitude = check_amplitude("sobel", amplitude)
    if amplitude == 0.0:
        return tf.convert_to_tensor(images)
    flat, shape = flatten_stack(images)
    edges = tf.image.sobel_edges(flat)  # [B, H, W, C, 2]: d/dy, d/dx
    magnitude = tf.sqrt(tf.reduce_sum(tf.square(edges), axis=-1)) / 4.0  # no gradient needed: no epsilon
    scale = _per_image_uniform(flat, 0.0, amplitude, seed)
    return tf.reshape(tf.clip_by_value(flat + scale * magnitude, 0.0, 1.0), shape)


def paint_background(
    images: tf.Tensor,
    alpha: tf.Tensor,
    backgrounds: tf.Tensor,
    amplitude: float,
    seed: tf.Tensor,
    min_crop: float = 0.3,
) -> tf.Tensor:
    """Paints the background of renders with random crops of real images (S5).

    images: [..., H, W, 3] float in [0, 1], premultiplied by ``alpha``, so black where
    transparent.
    alpha: [..., H, W, 1] in [0, 1].
    backgrounds: a pool [K, Hb, Wb, 3], uint8 or float in [0, 1].
    Each image is painted with probability ``a`` in [0, 1]. The paper paints every synthetic
    image, a = 1. A painted image takes a background of the pool and crops it with sides f ~
    U[min_crop, 1] of its own. The crop is resized to H x W and composited as ``x + (1 - alpha) *
    crop``. Pixels with alpha = 1 never change.
    """
    amplitude = check_amplitude("paint_background", amplitude)
    images = tf.convert_to_tensor(images, tf.float32)
    if amplitude == 0.0:
        return images
    flat, shape = flatten_stack(images)
    flat_alpha = tf.reshape(tf.cast(alpha, tf.float32), tf.concat([[-1], tf.shape(flat)[1:3], [1]], 0))
    # crop_and_resize reads uint8 directly: the (possibly large) pool is never converted whole.
    pool = tf.convert_to_tensor(backgrounds) if not isinstance(backgrounds, tf.Variable) else backgrounds
    count = tf.shape(flat)[0]
    seeds = tf.random.experimental.stateless_split(tf.cast(seed, tf.int64), num=3)
    which = tf.random.stateless_uniform([count], seeds[0], 0, tf.shape(pool)[0], dtype=tf.int32)
    draws = tf.random.stateless_uniform([count, 4], seed=seeds[1])
    side = min_crop + (1.0 - min_crop) * draws[:, :2]
    start = (1.0 - side) * draws[:, 2:]
    boxes = tf.concat([start, start + side], axis=1)  # [y1, x1, y2, x2]
    crops = tf.image.crop_and_resize(pool, boxes, which, crop_size=tf.shape(flat)[1:3])
    if pool.dtype == tf.uint8:
        crops = crops / 255.0
    painted = _per_image_uniform(flat, 0.0, 1.0, seeds[2]) < amplitude
    out = tf.where(painted, flat + (1.0 - flat_alpha) * crops, flat)
    return tf.reshape(tf.clip_by_value(out, 0.0, 1.0), shape)


# name -> function(images, amplitude, seed); the order of a spec is the order of application.
AUGMENTATIONS: dict[str, Callable[[tf.Tensor, float, tf.Tensor], tf.Tensor]] = {
    "contrast": random_contrast,
    "saturation": random_saturation,
    "crop": random_crop,
    "hue": random_hue,
    "translate": random_translate,
    "brightness": random_brightness,
    "gaussian_noise": gaussian_noise,
    "salt_pepper": salt_and_pepper,
    "sobel": add_sobel,
}
