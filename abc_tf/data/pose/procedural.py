"""The pose family's built-in data, no files: procedural cars or chairs.

Rendered by :mod:`abc_tf.data.pose.objects`, :mod:`abc_tf.data.pose.ray_cast` and
:mod:`abc_tf.data.pose.domains`. Training, "real" and test instances are disjoint pools
(:func:`abc_tf.data.pose.objects.make_instance`). Everything is rendered deterministically and cached per
category, image size and elevation filter, in the process and on disk (:mod:`abc_tf.data.pose.render_cache`):

- training: ``views_per_instance`` synthetic renders of each of ``train_instances`` instances
  (uint8 RGBA, premultiplied) and ``real_train_images`` unlabelled "real" photos;
- backgrounds: ``background_images`` clutter scenes without objects, painted behind the renders
  for every data source unless ``background_data_path`` names others;
- evaluation: renders of known pose of the training or test instances, in either domain.

Memory: 4000 training renders are 16 MB at 32 px and 262 MB at 128 px; 1000 backgrounds are 49 MB at 128 px.
"""

from __future__ import annotations

import dataclasses
import functools

import numpy as np

from abc_tf.data.pose import domains as pose_domains
from abc_tf.data.pose import objects as pose_objects
from abc_tf.data.pose import render_cache


@dataclasses.dataclass(frozen=True)
class ProceduralSizes:
    """How much procedural data is rendered (tests shrink these)."""

    train_instances: int = 100
    views_per_instance: int = 40
    real_train_images: int = 1000  # unlabelled "real" images for set B
    background_images: int = 1000  # built-in clutter scenes for background painting (any data source)
    real_views_per_instance: int = 4
    test_instances: int = 50
    test_images: int = 500  # default count of labelled_images(split="test")
    dictionary_images: int = 1800  # default count of labelled_images(split="train"), docs/PAPERS.md section 5


PROCEDURAL = ProceduralSizes()


def _supersample(size: int) -> int:
    """2x2 rays per pixel for small images (antialiasing), 1 above 64 px (cost)."""
    return 2 if size <= 64 else 1


def training_images(category: str, size: int, max_elevation: float) -> tuple[np.ndarray, ...]:
    """(synthetic uint8 RGBA [N, S, S, 4], Euler angles float32 [N, 3], instance int32 [N] sorted,
    instance names, "real" photos uint8 [R, S, S, 3]) at the sizes of ``PROCEDURAL``."""
    return _training_images(category, size, max_elevation, PROCEDURAL)


@functools.lru_cache(maxsize=4)
def _training_images(
    category: str, size: int, max_elevation: float, sizes: ProceduralSizes
) -> tuple[np.ndarray, ...]:
    synthetic, euler, instances, real = render_cache.cached(
        "pose_training",
        (category, size, max_elevation, sizes),
        lambda: _render_training_images(category, size, max_elevation, sizes),
    )
    names = [f"{category}_{i:04d}" for i in range(sizes.train_instances)]
    return synthetic, euler, instances, names, real


def _render_training_images(
    category: str, size: int, max_elevation: float, sizes: ProceduralSizes
) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng([pose_objects.CATEGORIES.index(category), 0xBA4C])
    count = sizes.train_instances * sizes.views_per_instance
    instances = np.repeat(np.arange(sizes.train_instances), sizes.views_per_instance).astype(np.int32)
    euler = pose_objects.sample_viewpoints(rng, count, max_elevation)
    synthetic, _ = pose_domains.render_synthetic(
        category, "train", instances, euler, size, _supersample(size)
    )
    real_count = sizes.real_train_images
    real_ids = np.arange(real_count) // max(1, sizes.real_views_per_instance)
    real_euler = pose_objects.sample_viewpoints(rng, real_count, max_elevation, tilt_std=0.05)
    real, _ = pose_domains.render_real(
        category, "real_train", real_ids, real_euler, size, seed=1, supersample=_supersample(size)
    )
    return synthetic, euler.astype(np.float32), instances, real


def backgrounds(size: int) -> np.ndarray:
    """The built-in backgrounds: ``PROCEDURAL.background_images`` clutter scenes (no objects),
    uint8 [K, S, S, 3]."""
    return _backgrounds(size, PROCEDURAL)


@functools.lru_cache(maxsize=4)
def _backgrounds(size: int, sizes: ProceduralSizes) -> np.ndarray:
    return render_cache.cached(
        "pose_backgrounds", (size, sizes), lambda: (_render_backgrounds(size, sizes),)
    )[0]


def _render_backgrounds(size: int, sizes: ProceduralSizes) -> np.ndarray:
    rng = np.random.default_rng([0xB6, 0xC1])  # its own stream: not the real images' clutter
    # In chunks: the scenes are drawn in float64 (1000 at 128 px would be 393 MB at once).
    counts = [min(100, sizes.background_images - start) for start in range(0, sizes.background_images, 100)]
    return np.concatenate(
        [pose_domains.to_uint8(pose_domains.clutter_backgrounds(rng, count, size)) for count in counts]
    )


def labelled_images(
    category: str,
    split: str,
    domain: str,
    num_images: int | None,
    size: int,
    max_elevation: float,
    rng: np.random.Generator,
    held_out: int = 0,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Renders of known pose of the ``split`` instances ("train": the training pool without its
    last ``held_out`` instances, "validation": those ``held_out`` instances, "test": the held-out
    test instances) in ``domain`` ("synthetic": clean renders on black, "real": the real
    domain); ``num_images`` of them (None: ``dictionary_images`` train, ``test_images`` test and
    validation). Returns (uint8 [n, S, S, 3], rotations [n, 3, 3], Euler angles [n, 3])."""
    sizes = PROCEDURAL
    count = num_images or (sizes.dictionary_images if split == "train" else sizes.test_images)
    first, stop = {
        "train": (0, sizes.train_instances - held_out),
        "validation": (sizes.train_instances - held_out, sizes.train_instances),
        "test": (0, sizes.test_instances),
    }[split]
    instance_ids = rng.integers(first, stop, count)
    split = "test" if split == "test" else "train"  # the validation instances are training instances
    real = domain == "real"
    euler = pose_objects.sample_viewpoints(rng, count, max_elevation, tilt_std=0.05 if real else 0.0)
    if real:
        images, rotations = pose_domains.render_real(
            category,
            split,
            instance_ids,
            euler,
            size,
            seed=int(rng.integers(1 << 31)),
            supersample=_supersample(size),
        )
    else:
        rgba, rotations = pose_domains.render_synthetic(
            category, split, instance_ids, euler, size, _supersample(size)
        )
        images = rgba[..., :3]  # premultiplied RGB = composited on black
    return images, rotations, euler
