"""Identity-preserving digit augmentation and the two-view stream of unconstrained digit sets.

:func:`augment` is Elastic-InfoGAN's T (PEERS.md section 3; used in its NT-Xent loss by
:mod:`abc_tf.methods.elastic_infogan`): each image rotated by up to +-20 degrees, zoomed by
0.9-1.1 and distorted by a mild elastic displacement, in one bilinear resampling, so a digit
stays itself. :func:`make_view_pair_dataset` streams MNIST's ``--augmentation_baseline`` (issue
17): each step P sets of ``set_size`` images drawn uniformly from the training images (no digit
constraint, so no label is used), as two independently augmented views ``set_a`` and
``set_a_view2`` (double augmentation), float32 in [0, 1], the layout of Shapes3D's baseline.
"""

from __future__ import annotations

import math

import numpy as np
import tensorflow as tf

from abc_tf.data.groups import CHUNK_STEPS, chunk_rng, draw_stream

# The augmentation T [code]: rotation, zoom, and a mild elastic distortion. The distortion is a
# random displacement of a coarse 4x4 grid of control points, interpolated bilinearly over the
# image [ours: its size is not given]: about one pixel, so a digit stays itself. Bilinear, not
# bicubic: XLA has no CPU kernel for a bicubic resize, and the training step compiles whole.
MAX_ROTATION_DEGREES, ZOOM_RANGE = 20.0, (0.9, 1.1)
ELASTIC_GRID, ELASTIC_PIXELS = 4, 1.0


def _bilinear(images: tf.Tensor, rows: tf.Tensor, cols: tf.Tensor) -> tf.Tensor:
    """images [B, H, W, C] sampled at fractional pixel coordinates rows, cols [B, H, W];
    outside the image is black (0)."""
    shape = tf.shape(images)
    height, width = shape[1], shape[2]
    row0, col0 = tf.floor(rows), tf.floor(cols)
    batch = tf.broadcast_to(tf.range(shape[0])[:, None, None], tf.shape(rows))
    out = 0.0
    for dr in (0.0, 1.0):
        for dc in (0.0, 1.0):
            r, c = row0 + dr, col0 + dc
            weight = (1.0 - tf.abs(rows - r)) * (1.0 - tf.abs(cols - c))
            inside = (r >= 0) & (r <= tf.cast(height - 1, tf.float32)) & (c >= 0) & (c <= tf.cast(width - 1, tf.float32))
            ri = tf.clip_by_value(tf.cast(r, tf.int32), 0, height - 1)
            ci = tf.clip_by_value(tf.cast(c, tf.int32), 0, width - 1)
            values = tf.gather_nd(images, tf.stack([batch, ri, ci], axis=-1))
            out += values * (weight * tf.cast(inside, tf.float32))[..., None]
    return out


def augment(images: tf.Tensor, seed: tf.Tensor, max_degrees: float = MAX_ROTATION_DEGREES,
            zoom: tuple[float, float] = ZOOM_RANGE, elastic_pixels: float = ELASTIC_PIXELS) -> tf.Tensor:
    """T(x): each float image [B, H, W, C] rotated about its centre by an angle uniform in
    +-max_degrees, zoomed by a factor uniform in ``zoom`` and distorted by a smooth random
    displacement of about ``elastic_pixels``, in one bilinear resampling (module docstring)."""
    images = tf.cast(images, tf.float32)
    shape = tf.shape(images)
    batch, height, width = shape[0], shape[1], shape[2]
    seeds = tf.random.experimental.stateless_split(seed, 3)
    angle = tf.random.stateless_uniform([batch], seeds[0], -1.0, 1.0) * (max_degrees * math.pi / 180.0)
    scale = tf.random.stateless_uniform([batch], seeds[1], zoom[0], zoom[1])
    coarse = tf.random.stateless_normal([batch, ELASTIC_GRID, ELASTIC_GRID, 2], seeds[2]) * elastic_pixels
    displacement = tf.image.resize(coarse, [height, width], method="bilinear")  # smooth over the image
    centre_r, centre_c = (tf.cast(height, tf.float32) - 1.0) / 2.0, (tf.cast(width, tf.float32) - 1.0) / 2.0
    grid_r, grid_c = tf.meshgrid(tf.range(height, dtype=tf.float32) - centre_r,
                                 tf.range(width, dtype=tf.float32) - centre_c, indexing="ij")
    # An output pixel takes the input at the inverse transform of its position: zooming in by s
    # reads from positions 1/s as far from the centre.
    cos, sin, inverse = tf.cos(angle)[:, None, None], tf.sin(angle)[:, None, None], (1.0 / scale)[:, None, None]
    rows = inverse * (cos * grid_r - sin * grid_c) + centre_r + displacement[..., 0]
    cols = inverse * (sin * grid_r + cos * grid_c) + centre_c + displacement[..., 1]
    return _bilinear(images, rows, cols)


def make_view_pair_dataset(images: np.ndarray, set_size: int, pairs_per_step: int, seed: int) -> tf.data.Dataset:
    """Endless ``{"set_a", "set_a_view2"}`` [P, S, 28, 28, 1] float32 in [0, 1] from ``images``
    [N, 28, 28] uint8: each of the P sets is S distinct images drawn uniformly from all N, and
    the two keys are two independent :func:`augment` views of the same images. A pure function
    of (seed, step)."""
    count, size, pairs = len(images), int(set_size), int(pairs_per_step)
    if count < size:
        raise ValueError(f"--set_size={size} exceeds the {count} training images of the augmentation baseline.")

    def draw_chunk(chunk: int) -> tuple[np.ndarray]:
        rng = chunk_rng(seed, chunk)
        rows = np.stack([rng.choice(count, size, replace=False) for _ in range(CHUNK_STEPS * pairs)])
        return (rows.reshape(CHUNK_STEPS, pairs, size),)

    pool = tf.constant(np.asarray(images)[..., None])

    def views(step: tf.Tensor, draws: tuple[tf.Tensor]) -> dict[str, tf.Tensor]:
        sources = tf.cast(tf.gather(pool, tf.reshape(draws[0], [-1])), tf.float32) / 255.0
        seeds = tf.random.experimental.stateless_split(tf.stack([tf.constant(int(seed) % (1 << 63), tf.int64), step]), 2)
        shape = [pairs, size, *images.shape[1:], 1]
        return {key: tf.reshape(augment(sources, seeds[index]), shape)
                for index, key in enumerate(("set_a", "set_a_view2"))}

    dataset = draw_stream(draw_chunk, [tf.int64], [(pairs, size)]).map(
        views, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True
    )
    return dataset.prefetch(tf.data.AUTOTUNE)
