"""The two image domains of procedural pose data, rendered by :mod:`abc_tf.data.pose.ray_cast`.

- **synthetic domain** (KeypointNet-like): Lambertian shading under a light fixed relative
  to the camera, transparent background (RGBA; RGB premultiplied, i.e. black outside the
  object), no tilt.
- **"real" domain** (Pascal3D+-like, only for evaluation and as unlabelled images): the
  "real" paints and glossy materials of :func:`abc_tf.data.pose.objects.make_instance`,
  a random sun direction and ambient level, slightly jittered (annotator-like) boxes,
  cluttered backgrounds, blur, sensor noise and a gamma change. (The small in-plane tilt is
  the caller's: the viewpoints it passes.)

Both are pure functions of their seeds.
"""

from __future__ import annotations

import numpy as np
from scipy import ndimage

from abc_tf.data.pose.objects import make_instance, stack_instances
from abc_tf.data.pose.ray_cast import Lighting, render
from abc_tf.geometry import euler_to_matrix


def synthetic_lighting(count: int) -> Lighting:
    """KeypointNet-like renders: one light above-left of the camera, fixed, no highlights."""
    light = np.array([-0.35, 0.55, 0.76])
    light = np.tile(light / np.linalg.norm(light), (count, 1))
    return Lighting(light, np.full(count, 0.45), np.zeros(count))


def real_lighting(rng: np.random.Generator, rotations: np.ndarray) -> Lighting:
    """A random sun above the horizon (world frame), random ambient level, glossy highlights."""
    count = rotations.shape[0]
    sun_azimuth = rng.uniform(0, 2 * np.pi, count)
    sun_elevation = rng.uniform(0.25, 1.4, count)
    sun_world = np.stack(
        [
            np.cos(sun_elevation) * np.cos(sun_azimuth),
            np.cos(sun_elevation) * np.sin(sun_azimuth),
            np.sin(sun_elevation),
        ],
        -1,
    )
    light = np.einsum("bij,bj->bi", rotations, sun_world)
    return Lighting(light, rng.uniform(0.35, 0.7, count), rng.uniform(0.3, 0.9, count))


def clutter_backgrounds(rng: np.random.Generator, count: int, size: int) -> np.ndarray:
    """Cluttered scenes [count, size, size, 3] in [0, 1]: a sky/ground gradient with random
    rectangles and discs of random colours, the stand-in for real photo backgrounds."""
    rows = np.linspace(0.0, 1.0, size)[None, :, None, None]
    top, bottom = rng.uniform(0.1, 0.95, (count, 1, 1, 3)), rng.uniform(0.05, 0.7, (count, 1, 1, 3))
    horizon = rng.uniform(0.3, 0.7, (count, 1, 1, 1))
    out = np.where(rows < horizon, top + (bottom - top) * rows * 0.3, bottom * (0.8 + 0.4 * rows))
    out = np.broadcast_to(out, (count, size, size, 3)).copy()
    yy, xx = np.meshgrid(np.arange(size) / size, np.arange(size) / size, indexing="ij")
    for _ in range(10):
        colour = rng.uniform(0.0, 1.0, (count, 1, 1, 3))
        cy, cx = rng.uniform(-0.1, 1.1, (2, count, 1, 1))
        hy, hx = rng.uniform(0.03, 0.35, (2, count, 1, 1))
        rect = (np.abs(yy - cy) < hy) & (np.abs(xx - cx) < hx)
        disc = (yy - cy) ** 2 + (xx - cx) ** 2 < (hy * hx)
        shape = np.where(rng.uniform(size=(count, 1, 1)) < 0.6, rect, disc)
        shape &= rng.uniform(size=(count, 1, 1)) < 0.8
        out = np.where(shape[..., None], colour, out)
    return np.clip(out, 0.0, 1.0)


def to_uint8(images: np.ndarray) -> np.ndarray:
    return np.clip(np.rint(np.asarray(images) * 255.0), 0, 255).astype(np.uint8)


def render_synthetic(
    category: str, pool: str, instance_ids: np.ndarray, euler: np.ndarray, size: int, supersample: int = 2
) -> tuple[np.ndarray, np.ndarray]:
    """KeypointNet-like renders: (RGBA uint8 [B, size, size, 4] with RGB premultiplied,
    rotations [B, 3, 3]).
    """
    instance_ids = np.asarray(instance_ids)
    cache = {int(i): make_instance(category, pool, int(i)) for i in np.unique(instance_ids)}
    objects = stack_instances([cache[int(i)] for i in instance_ids])
    rgb, alpha, rotations = render(
        objects, euler, size, synthetic_lighting(len(instance_ids)), supersample=supersample
    )
    return np.concatenate([to_uint8(rgb), to_uint8(alpha)[..., None]], axis=-1), rotations


def render_real(
    category: str,
    pool: str,
    instance_ids: np.ndarray,
    euler: np.ndarray,
    size: int,
    seed: int,
    supersample: int = 2,
) -> tuple[np.ndarray, np.ndarray]:
    """ "Real"-domain photos: (RGB uint8 [B, size, size, 3], rotations [B, 3, 3]).

    Other materials and palettes, a random sun, jittered boxes, clutter behind the object,
    then Gaussian blur (sigma 0.2..1.0 px), a gamma change and sensor noise (sigma up to 0.04).
    """
    instance_ids = np.asarray(instance_ids)
    rng = np.random.default_rng([int(seed), 0x4EA1])
    cache = {int(i): make_instance(category, pool, int(i), real=True) for i in np.unique(instance_ids)}
    objects = stack_instances([cache[int(i)] for i in instance_ids])
    rotations = euler_to_matrix(euler)
    jitter = rng.normal(0.0, 0.03, (len(instance_ids), 4))
    rgb, alpha, rotations = render(objects, euler, size, real_lighting(rng, rotations), jitter, supersample)
    background = clutter_backgrounds(rng, len(instance_ids), size)
    image = rgb + (1.0 - alpha[..., None]) * background
    sigmas = rng.uniform(0.2, 1.0, len(image)) * size / 64.0
    image = np.stack([ndimage.gaussian_filter(im, (s, s, 0)) for im, s in zip(image, sigmas)])
    image = np.clip(image, 0.0, 1.0) ** rng.uniform(0.6, 1.1, (len(image), 1, 1, 1))
    image = image + rng.normal(0.0, 1.0, image.shape) * rng.uniform(0.0, 0.04, (len(image), 1, 1, 1))
    return to_uint8(image), rotations
