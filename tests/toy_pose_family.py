"""A tiny pose data family for tests of the pose head, evaluation and export (not shipped).

Images 16x16x3 uint8 are a smooth function of the camera rotation R: channel c at pixel (u, v)
is 0.5 + 0.45 * (R[c, 0] u + R[c, 1] v + 0.5 R[c, 2]), so equal poses give equal images.
Euler angles (radians, authors' convention): azimuth in [0, 2 pi), elevation in [-0.5, 0.5],
tilt 0. Declares what abc_tf.data.pose.family declares, images of known pose included.
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from abc_tf import geometry
from abc_tf.data.pose import PoseConfig
from abc_tf.data.family import DataFamily

SIZE = 16
IMAGE_SHAPE = (SIZE, SIZE, 3)


def random_euler(rng: np.random.Generator, count: int) -> np.ndarray:
    return np.stack(
        [rng.uniform(0, 2 * np.pi, count), rng.uniform(-0.5, 0.5, count), np.zeros(count)], axis=-1
    )


def render(euler: np.ndarray, rng: np.random.Generator | None = None) -> np.ndarray:
    """Euler [n, 3] -> uint8 images [n, 16, 16, 3]; with ``rng``, the noisy "real" domain."""
    rotations = geometry.euler_to_matrix(euler)
    grid = np.linspace(-1, 1, SIZE)
    u, v = np.meshgrid(grid, grid)
    pixels = np.stack([u, v, np.full_like(u, 0.5)], axis=-1)  # [H, W, 3]
    images = 0.5 + 0.45 * np.einsum("hwk,nck->nhwc", pixels, rotations) / 1.5
    if rng is not None:
        images = images + rng.normal(0, 0.03, images.shape)
    return np.clip(np.round(images * 255), 0, 255).astype(np.uint8)


def labelled_images(config, split: str, domain: str, num_images: int | None = None, seed: int = 0):
    """(images uint8 [n, 16, 16, 3], rotations [n, 3, 3], euler [n, 3]), like abc_tf.data.pose.family."""
    rng = np.random.default_rng([seed, 0 if split == "train" else 1])
    count = num_images or (60 if domain == "synthetic" else 40)
    euler = random_euler(rng, count)
    images = render(euler, rng if domain == "real" else None)
    return images, geometry.euler_to_matrix(euler), euler


def make_dataset(config, seed: int, start_step: int = 0) -> tf.data.Dataset:
    """Set-pair batches with ``labels_a`` [P, N, 3] float32 (Euler angles of set A)."""

    def generate():
        rng = np.random.default_rng(seed)
        pairs, size = config.batch.pairs_per_step, config.batch.set_size
        while True:
            euler_a = random_euler(rng, pairs * size)
            batch = {
                "set_a": render(euler_a).reshape(pairs, size, *IMAGE_SHAPE),
                "set_b": render(random_euler(rng, pairs * size)).reshape(pairs, size, *IMAGE_SHAPE),
                "labels_a": euler_a.reshape(pairs, size, 3).astype(np.float32),
            }
            yield batch

    example = next(generate())
    signature = {key: tf.TensorSpec(value.shape, value.dtype) for key, value in example.items()}
    return tf.data.Dataset.from_generator(generate, output_signature=signature)


def image_shape(config) -> tuple[int, int, int]:
    return IMAGE_SHAPE


# Registered under the name "pose" by the tests, in place of the real family, with the real
# family's config class (its fields too): ``abc_tf.data.DATA_FAMILIES["pose"] = ENTRY``.
ENTRY = "toy_pose_family:FAMILY"
FAMILY = DataFamily(
    name="pose",
    config=PoseConfig,
    image_shape=image_shape,
    streams={"sets": make_dataset},
    pose_views=labelled_images,
    evaluation_task="pose",
)
