"""Identity-preserving digit augmentation and the two-view stream of unconstrained digit sets.

:func:`augment` is Elastic-InfoGAN's T (docs/PAPERS.md section P3), as the authors' code has it.
:mod:`abc_tf.methods.elastic_infogan.model` uses it in its NT-Xent loss. It is Augmentor's rotate
by whole degrees up to +-20 and its zoom by 0.9-1.1, in one bilinear resampling, so a digit stays
itself. The rotate crops and rescales (:func:`rotation_crop`). [ours] An opt-in mild elastic
displacement on top (``elastic_pixels``).

:func:`make_view_pair_dataset` streams MNIST's ``--batch.augmentation_baseline``. Each step has P
sets of ``set_size`` uniform training images, with no digit constraint and no label. They come as
two independently augmented views ``set_a`` and ``set_a_view2``, float32 in [0, 1]. That is the
layout of Shapes3D's baseline.
"""

from __future__ import annotations

import math

import numpy as np
import tensorflow as tf

from abc_tf.data.groups import CHUNK_STEPS, chunk_rng, draw_stream

# The augmentation T [code: the authors' dataloader.py, an Augmentor pipeline]: rotate
# (probability 1, at most 20 degrees either way), zoom (probability 1, factor 0.9-1.1), then
# random_distortion on a 1 x 1 grid, which moves nothing (a grid of one tile has no inner control
# point) and is left out. Augmentor's rotate draws the side (left or right) and then a whole
# number of degrees 0..20 on it, so 0 comes twice as often as any other angle; it rotates on a
# canvas enlarged to hold the whole image, cuts a rectangle out of it and resizes that back to
# the image's size (rotation_crop): at 20 degrees a 28 x 28 digit is stretched 1.40 times across
# and 1.75 times down. Its zoom rounds the factor f to 2 decimals, resizes the image to
# round(28 f) pixels and cuts out the centre 28 x 28 (padding black when smaller). PIL resamples
# bicubically at each of these steps; we compose them into one bilinear resampling [ours: XLA
# has no CPU kernel for a bicubic resize, and the training step compiles whole].
MAX_ROTATION_DEGREES, ZOOM_RANGE = 20, (0.9, 1.1)
# The elastic field [ours, opt in: --method.elastic_field]: a random displacement of a coarse
# 4 x 4 grid of control points, interpolated bilinearly over the image, of about one pixel.
ELASTIC_GRID, ELASTIC_PIXELS = 4, 1.0


def _bilinear(images: tf.Tensor, rows: tf.Tensor, cols: tf.Tensor) -> tf.Tensor:
    """images [B, H, W, C] sampled at fractional pixel coordinates rows, cols [B, H, W].

    Outside the image is black.
    """
    shape = tf.shape(images)
    height, width = shape[1], shape[2]
    row0, col0 = tf.floor(rows), tf.floor(cols)
    batch = tf.broadcast_to(tf.range(shape[0])[:, None, None], tf.shape(rows))
    out = 0.0
    for dr in (0.0, 1.0):
        for dc in (0.0, 1.0):
            r, c = row0 + dr, col0 + dc
            weight = (1.0 - tf.abs(rows - r)) * (1.0 - tf.abs(cols - c))
            inside = (
                (r >= 0)
                & (r <= tf.cast(height - 1, tf.float32))
                & (c >= 0)
                & (c <= tf.cast(width - 1, tf.float32))
            )
            ri = tf.clip_by_value(tf.cast(r, tf.int32), 0, height - 1)
            ci = tf.clip_by_value(tf.cast(c, tf.int32), 0, width - 1)
            values = tf.gather_nd(images, tf.stack([batch, ri, ci], axis=-1))
            out += values * (weight * tf.cast(inside, tf.float32))[..., None]
    return out


def rotation_crop(degrees: int, width: int, height: int) -> tuple[int, int, tuple[int, int, int, int]]:
    """Augmentor's rotate of a ``width`` x ``height`` image by ``degrees``, counter-clockwise.

    Returns the canvas width, the canvas height, and the crop box (left, top, right, bottom) on
    the canvas.
    PIL rotates onto a canvas enlarged to the rotated corners' extent, by floor and ceil about
    the centre. Augmentor then cuts the box E, A, X - E, Y - A out of the X x Y canvas, with t =
    tan|degrees| and E = t (Y - X t) - t^2. Its formula's "/ 1 - t^2" divides by one before
    subtracting. B = X - E and A = t B, rounded to whole pixels. The box is resized to width x
    height. 0 degrees keeps the image, PIL's shortcut.
    """
    if not abs(degrees) < 45:
        raise ValueError(f"Augmentor's rotate crop is defined below 45 degrees, got {degrees}.")
    if degrees == 0:
        return width, height, (0, 0, width, height)
    radians = -math.radians(degrees)  # PIL's matrix maps the canvas back onto the image
    cos, sin = round(math.cos(radians), 15), round(math.sin(radians), 15)
    corners = [
        (x - width / 2.0, y - height / 2.0) for x, y in ((0, 0), (width, 0), (width, height), (0, height))
    ]
    xs = [cos * x + sin * y + width / 2.0 for x, y in corners]
    ys = [-sin * x + cos * y + height / 2.0 for x, y in corners]
    canvas_w = int(math.ceil(max(xs)) - math.floor(min(xs)))
    canvas_h = int(math.ceil(max(ys)) - math.floor(min(ys)))
    angle = math.radians(abs(degrees))
    ratio = math.sin(angle) / math.sin(math.pi / 2 - angle)
    e = ratio * (canvas_h - canvas_w * ratio) - ratio**2
    a = ratio * (canvas_w - e)
    box = tuple(
        int(math.floor(value + 0.5)) for value in (e, a, canvas_w - e, canvas_h - a)
    )  # Python 2's round
    return canvas_w, canvas_h, box


def transform_parameters(
    seed: tf.Tensor, total, max_degrees: int = MAX_ROTATION_DEGREES, zoom: tuple[float, float] = ZOOM_RANGE
) -> tuple[tf.Tensor, tf.Tensor]:
    """Augmentor's draws for ``total`` images.

    Whole degrees int32 [total]: a side, then 0..max on it. Zoom factors float32 [total]: uniform
    in ``zoom``, rounded to 2 decimals.
    """
    seeds = tf.random.experimental.stateless_split(seed, 3)
    side = tf.random.stateless_uniform([total], seeds[0], 0, 2, dtype=tf.int32)
    magnitude = tf.random.stateless_uniform([total], seeds[1], 0, int(max_degrees) + 1, dtype=tf.int32)
    degrees = tf.where(side == 0, -magnitude, magnitude)
    factors = tf.floor(tf.random.stateless_uniform([total], seeds[2], zoom[0], zoom[1]) * 100.0 + 0.5) / 100.0
    return degrees, factors


def transform(
    images: tf.Tensor,
    degrees: tf.Tensor,
    factors: tf.Tensor,
    max_degrees: int = MAX_ROTATION_DEGREES,
    displacement: tf.Tensor | None = None,
) -> tf.Tensor:
    """Float images [B, H, W, C] rotated, zoomed and displaced in one bilinear resampling.

    H and W must be known when traced. Each image is rotated as Augmentor does by ``degrees``
    [B], whole and at most ``max_degrees``. It is zoomed by ``factors`` [B]. If given,
    ``displacement`` [B, H, W, 2] moves it by that many pixels in rows and columns.
    """
    images = tf.cast(images, tf.float32)
    height, width = int(images.shape[1]), int(images.shape[2])
    limit = int(max_degrees)
    table = np.array(
        [(w, h, *box) for w, h, box in (rotation_crop(d, width, height) for d in range(-limit, limit + 1))],
        np.float32,
    )
    crop = tf.gather(tf.constant(table), tf.cast(degrees, tf.int32) + limit)  # [B, 6]
    canvas_w, canvas_h, left, top, right, bottom = (crop[:, i, None, None] for i in range(6))
    radians = tf.cast(degrees, tf.float32)[:, None, None] * (math.pi / 180.0)
    factors = tf.cast(factors, tf.float32)[:, None, None]
    # Pixel centres in continuous coordinates (corners at whole numbers), as PIL samples them.
    y, x = tf.meshgrid(
        tf.range(height, dtype=tf.float32) + 0.5, tf.range(width, dtype=tf.float32) + 0.5, indexing="ij"
    )
    # Zoom: the output is the centre cut of the image resized to round(f W) x round(f H).
    zoomed_w, zoomed_h = tf.floor(factors * width + 0.5), tf.floor(factors * height + 0.5)
    x, y = x + tf.floor(zoomed_w / 2.0 - width / 2.0), y + tf.floor(zoomed_h / 2.0 - height / 2.0)
    # Outside the resized image the cut is black (a zoom below 1 pads it): what the rotation's
    # crop left out of the image stays out.
    inside = tf.cast((x > 0) & (x < zoomed_w) & (y > 0) & (y < zoomed_h), tf.float32)
    x, y = x * (width / zoomed_w), y * (height / zoomed_h)
    # Rotate: the crop box resized to the image, on the canvas about whose centre the image turned.
    x = left + x * (right - left) / width - canvas_w / 2.0
    y = top + y * (bottom - top) / height - canvas_h / 2.0
    cos, sin = tf.cos(radians), tf.sin(radians)
    source_x = cos * x - sin * y + width / 2.0
    source_y = sin * x + cos * y + height / 2.0
    sample_rows, sample_cols = source_y - 0.5, source_x - 0.5  # back to pixel indices
    if displacement is not None:
        sample_rows, sample_cols = sample_rows + displacement[..., 0], sample_cols + displacement[..., 1]
    return _bilinear(images, sample_rows, sample_cols) * inside[..., None]


def augment(
    images: tf.Tensor,
    seed: tf.Tensor,
    max_degrees: int = MAX_ROTATION_DEGREES,
    zoom: tuple[float, float] = ZOOM_RANGE,
    elastic_pixels: float = 0.0,
    rows: tuple[tf.Tensor, tf.Tensor] | None = None,
) -> tf.Tensor:
    """T(x) of float images [B, H, W, C].

    Augmentor's rotate by whole degrees up to +-max_degrees and zoom by a factor in ``zoom``
    (:func:`transform_parameters`, :func:`transform`). With ``elastic_pixels`` > 0, also a smooth
    random displacement of about that many pixels.
    ``rows`` = (first, total): the images are rows first..first + B of a batch of ``total``, and
    get those rows' draws. That is a replica's share: ``abc_tf.methods.base.replica_rows``.
    """
    images = tf.cast(images, tf.float32)
    batch = tf.shape(images)[0]
    first, total = (0, batch) if rows is None else rows
    seeds = tf.random.experimental.stateless_split(seed, 2)
    degrees, factors = transform_parameters(seeds[0], total, max_degrees, zoom)
    displacement = None
    if elastic_pixels > 0:
        coarse = tf.random.stateless_normal([total, ELASTIC_GRID, ELASTIC_GRID, 2], seeds[1])[
            first : first + batch
        ]
        displacement = tf.image.resize(
            coarse * elastic_pixels, tf.shape(images)[1:3], method="bilinear"
        )  # smooth
    return transform(
        images, degrees[first : first + batch], factors[first : first + batch], max_degrees, displacement
    )


def make_view_pair_dataset(
    images: np.ndarray, set_size: int, pairs_per_step: int, seed: int
) -> tf.data.Dataset:
    """Endless ``{"set_a", "set_a_view2"}`` [P, S, 28, 28, 1] float32 in [0, 1] from ``images`` [N,
    28, 28] uint8.

    Each of the P sets is S distinct images drawn uniformly from all N. The two keys are two
    independent :func:`augment` views of the same images. A pure function of seed and step.
    """
    count, size, pairs = len(images), int(set_size), int(pairs_per_step)
    if count < size:
        raise ValueError(
            f"--batch.set_size={size} exceeds the {count} training images of the augmentation baseline."
        )

    def draw_chunk(chunk: int) -> tuple[np.ndarray]:
        rng = chunk_rng(seed, chunk)
        rows = np.stack([rng.choice(count, size, replace=False) for _ in range(CHUNK_STEPS * pairs)])
        return (rows.reshape(CHUNK_STEPS, pairs, size),)

    pool = tf.constant(np.asarray(images)[..., None])

    def views(step: tf.Tensor, draws: tuple[tf.Tensor]) -> dict[str, tf.Tensor]:
        sources = tf.cast(tf.gather(pool, tf.reshape(draws[0], [-1])), tf.float32) / 255.0
        seeds = tf.random.experimental.stateless_split(
            tf.stack([tf.constant(int(seed) % (1 << 63), tf.int64), step]), 2
        )
        shape = [pairs, size, *images.shape[1:], 1]
        return {
            key: tf.reshape(augment(sources, seeds[index]), shape)
            for index, key in enumerate(("set_a", "set_a_view2"))
        }

    dataset = draw_stream(draw_chunk, [tf.int64], [(pairs, size)]).map(
        views, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True
    )
    return dataset.prefetch(tf.data.AUTOTUNE)
