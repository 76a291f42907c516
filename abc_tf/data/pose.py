"""Pose isolation from synthetic to real (family ``pose``; SPEC.md sections 1, 3, 5, 6; S5, S8.3).

A training batch holds ``pairs_per_step`` pairs of sets:

- **set A**: ``set_size`` synthetic renders of ONE object instance (pose is the only active
  factor; instance, texture and lighting are inactive);
- **set B**: ``set_size`` synthetic renders drawn from all training instances and views
  (unconstrained), of which a fraction is replaced by unlabelled real images. The fraction
  follows the titration schedule :func:`abc_tf.schedules.real_fraction` of the training step:
  none at first, then up to ``real_fraction`` in stairs every ``titration_interval`` steps.
  Per pair, ``floor(f M + u)`` images (u ~ U[0, 1)) are real: the expected fraction is f
  exactly, even when f M < 1.

Every image is augmented twice (``double_augmentation``, views ``*_view2``) by
:func:`abc_tf.augment.pose_augment`: bounding-box translation (``crop_amplitude``), background
painting of renders with random crops of the background images, hue (real images only),
brightness, an added Sobel copy, normal and salt-and-pepper noise (``augmentation_amplitude``).

Backgrounds have their own source, separate from the real images of set B: the paper paints
renders with crops of ImageNet-A (supplement S5), images without the category's objects, so a
render never gets a second car behind it. ``background_data_path`` names a folder of such
images; by default the built-in procedural clutter scenes
(:func:`abc_tf.data.render.pose.clutter_backgrounds`, no objects) are used, for every
data source.

Batch keys: ``set_a``, ``set_b`` (and ``*_view2``) uint8 [P, N or M, S, S, 3];
``labels_a`` float32 [P, N, 3]: Euler angles (azimuth, elevation, tilt; radians, the
convention of :mod:`abc_tf.geometry`) of set A's images, for a regression head;
``real_b`` bool [P, M]: which images of set B are real. Batch t depends only on
(seed, step): stateless sampling, reproducible, and a resumed run (``start_step``) continues
the titration schedule where it stopped.

Data sources (``data_source``):

- ``procedural`` (default; no files): :mod:`abc_tf.data.render.pose` renders car-like or
  chair-like instances (``pose_category``). Training instances, the instances of the
  unlabelled "real" images and the test instances are disjoint.
- ``keypointnet``: ``data_path`` is a folder of KeypointNet tfrecords (or one file): one
  file per object instance, each example two views ``img0``/``img1`` (PNG, RGBA) with
  modelview matrices ``mv0``/``mv1`` (16 float32). Files named in ``test.txt`` or
  ``dev.txt`` next to them are left out of training (``test.txt`` forms the test split).
  Views above the maximum elevation (0.5 rad cars, 1.3 rad chairs, or ``max_elevation``) are
  dropped; each view is tight-cropped to its alpha channel and resized to ``image_size``.
  ``real_data_path`` is a folder of unlabelled real images (e.g. CompCars crops), read
  recursively and resized; ``pose_test_list`` a Pascal3D+-style list for evaluation.

Memory: the training renders stay in RAM as uint8 RGBA, N x S x S x 4 bytes (the procedural
default: 4000 renders, 16 MB at 32 px, 262 MB at 128 px), plus the real images and the
backgrounds (the built-in 1000: 49 MB at 128 px).
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import os
from pathlib import Path
from typing import Callable, Sequence

import keras
import numpy as np
import tensorflow as tf

from abc_tf import augment, schedules
from abc_tf.config import ExperimentConfig
from abc_tf.data import folders
from abc_tf.data.family import DataFamily
from abc_tf.data.render import pose as render
from abc_tf.geometry import euler_to_matrix, matrix_to_euler, pascal3d_to_euler

logger = logging.getLogger(__name__)

SOURCES = ("procedural", "keypointnet")
SPLITS = ("train", "test")
DOMAINS = ("synthetic", "real")
TEST_LIST_FILE = "test.txt"  # KeypointNet: instances of the test split
DEV_LIST_FILE = "dev.txt"  # KeypointNet: validation instances, kept out of training

# KeypointNet renders ShapeNet models, whose frame has y up; the authors' Euler convention
# (abc_tf.geometry) has z up. Columns: the z-up basis vectors in ShapeNet coordinates
# (x -> x, y -> -z, z -> y), so R = R_modelview @ OBJECT_AXES. Elevation does not depend on
# this choice; a different horizontal axis would only offset every azimuth by a constant.
OBJECT_AXES = np.array([[1.0, 0.0, 0.0], [0.0, 0.0, 1.0], [0.0, -1.0, 0.0]])


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
    dictionary_images: int = 1800  # default count of labelled_images(split="train"), SPEC.md section 5


PROCEDURAL = ProceduralSizes()


@dataclasses.dataclass
class PoseBanks:
    """The images training draws from.

    synthetic: uint8 [Ns, S, S, 4] renders, RGB premultiplied by alpha (black outside the
      object), rows of one instance contiguous; euler: float32 [Ns, 3] radians;
      instances: int32 [Ns] instance of each row (sorted); instance_names: one per instance;
      real: uint8 [Nr, S, S, 3] unlabelled real images (Nr may be 0);
      backgrounds: uint8 [Nk, S, S, 3] images painted behind the renders (Nk = 0: none).
    """

    synthetic: np.ndarray
    euler: np.ndarray
    instances: np.ndarray
    instance_names: list[str]
    real: np.ndarray
    backgrounds: np.ndarray

    @property
    def counts(self) -> np.ndarray:
        return np.bincount(self.instances, minlength=len(self.instance_names)).astype(np.int64)

    @property
    def offsets(self) -> np.ndarray:
        return np.concatenate([[0], np.cumsum(self.counts)[:-1]]).astype(np.int64)


# ----------------------------------------------------------------------------- config


def max_elevation(config: ExperimentConfig) -> float:
    """The elevation filter in radians: ``max_elevation``, or the category's (0.5 car, 1.3 chair)."""
    if config.max_elevation > 0:
        return float(config.max_elevation)
    return render.DEFAULT_MAX_ELEVATION[config.pose_category]


def check_config(config: ExperimentConfig) -> None:
    """Raises ValueError naming the flag when a pose setting cannot work."""
    if config.pose_category not in render.CATEGORIES:
        raise ValueError(f"--pose_category must be one of {', '.join(render.CATEGORIES)}, got {config.pose_category!r}.")
    if config.data_source not in SOURCES:
        raise ValueError(f"--data_source for data=pose must be one of {', '.join(SOURCES)}, got {config.data_source!r}.")
    if not 0.0 <= config.max_elevation <= np.pi / 2:
        raise ValueError(f"--max_elevation must lie in [0, pi/2] radians (0: category default), got {config.max_elevation}.")
    if not 0.0 <= config.real_fraction <= 1.0:
        raise ValueError(f"--real_fraction must lie in [0, 1], got {config.real_fraction}.")
    if config.titration_interval < 0:
        raise ValueError(f"--titration_interval must be >= 0 (0: no titration), got {config.titration_interval}.")
    if config.real_fraction > 0 and config.titration_interval >= config.steps:
        raise ValueError(
            f"--titration_interval={config.titration_interval} is not below --steps={config.steps}: real images "
            "would never enter set B. Lower --titration_interval, or set --real_fraction=0."
        )
    if not 0.0 <= config.crop_amplitude < 1.0:
        raise ValueError(f"--crop_amplitude must lie in [0, 1), got {config.crop_amplitude}.")
    if not 0.0 <= config.augmentation_amplitude <= 5.0:
        raise ValueError(f"--augmentation_amplitude must lie in [0, 5], got {config.augmentation_amplitude}.")
    if config.augmentations:
        raise ValueError(
            "--augmentations is not used by data=pose; its augmentations (supplement S5) are set by "
            "--crop_amplitude and --augmentation_amplitude."
        )
    if config.image_channels != 3:
        raise ValueError(f"data=pose works on RGB images: --image_channels must be 3, got {config.image_channels}.")
    if config.image_size < 16:
        raise ValueError(f"--image_size must be at least 16 for pose images, got {config.image_size}.")
    if config.data_source == "keypointnet" and not config.data_path:
        raise ValueError("--data_source=keypointnet needs --data_path: a folder of KeypointNet .tfrecord files.")
    if config.data_source == "keypointnet" and config.real_fraction > 0 and not config.real_data_path:
        raise ValueError(
            "--real_fraction > 0 needs unlabelled real images: give --real_data_path (a folder of images), "
            "or set --real_fraction=0."
        )


def image_shape(config: ExperimentConfig) -> tuple[int, int, int]:
    """(image_size, image_size, 3)."""
    return (config.image_size, config.image_size, 3)


# ----------------------------------------------------------------------------- KeypointNet tfrecords


def rotation_from_modelview(modelview: np.ndarray) -> np.ndarray:
    """Modelview matrices [..., 16] (KeypointNet: row-major, column vectors, camera looking
    along -z) -> authors' rotations [..., 3, 3] (world z up).

    KeypointNet multiplies row vectors by the transposed reshape, i.e. p_cam = M p_obj with
    M = reshape(mv, [4, 4]). The rotation block is orthonormalised (nearest rotation, SVD)
    against rounding or a uniform scale, then ShapeNet's y-up frame is turned z-up.
    """
    matrices = np.asarray(modelview, np.float64).reshape(*np.shape(modelview)[:-1], 4, 4)[..., :3, :3]
    u, _, vt = np.linalg.svd(matrices)
    rotation = u @ vt
    return rotation @ OBJECT_AXES


def _parse_example(serialized: tf.Tensor) -> dict[str, tf.Tensor]:
    features = {
        "img0": tf.io.FixedLenFeature([], tf.string),
        "img1": tf.io.FixedLenFeature([], tf.string),
        "mv0": tf.io.FixedLenFeature([16], tf.float32),
        "mv1": tf.io.FixedLenFeature([16], tf.float32),
    }
    return tf.io.parse_single_example(serialized, features)


def tight_crop(rgba: tf.Tensor, size: int) -> tuple[tf.Tensor, tf.Tensor]:
    """Crops an RGBA image [H, W, 4] (uint8, straight alpha) to the bounding box of alpha > 0
    and resizes it to [size, size, 4] (bilinear, antialiased; the box is stretched, like a box
    crop of a photo). RGB comes back premultiplied by alpha. Returns (uint8 image, valid):
    ``valid`` is False when the alpha channel is empty (the image is then all zeros)."""
    alpha = rgba[..., 3] > 0
    rows = tf.where(tf.reduce_any(alpha, axis=1))[:, 0]
    cols = tf.where(tf.reduce_any(alpha, axis=0))[:, 0]
    valid = tf.size(rows) > 0

    def crop() -> tf.Tensor:
        top, bottom = tf.reduce_min(rows), tf.reduce_max(rows) + 1
        left, right = tf.reduce_min(cols), tf.reduce_max(cols) + 1
        box = tf.cast(rgba[top:bottom, left:right], tf.float32) / 255.0
        premultiplied = tf.concat([box[..., :3] * box[..., 3:], box[..., 3:]], axis=-1)
        resized = tf.image.resize(premultiplied, [size, size], method="bilinear", antialias=True)
        return tf.cast(tf.clip_by_value(tf.round(resized * 255.0), 0.0, 255.0), tf.uint8)

    image = tf.cond(valid, crop, lambda: tf.zeros([size, size, 4], tf.uint8))
    return image, valid


def keypointnet_files(data_path: str, split: str) -> list[str]:
    """The tfrecord files of a split: ``test`` = files whose stem ``test.txt`` names; ``train`` =
    the rest minus ``dev.txt``. ``data_path`` may also be one .tfrecord file (train split)."""
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, got {split!r}.")
    path = Path(data_path)
    if path.is_file():
        if split == "test":
            raise ValueError(f"--data_path {data_path} is one file; a test split needs a folder with {TEST_LIST_FILE}.")
        return [str(path)]
    if not path.is_dir():
        raise ValueError(f"--data_path {data_path} is neither a .tfrecord file nor a folder of them.")
    files = sorted(str(p) for p in path.iterdir() if p.suffix == ".tfrecord")
    if not files:
        raise ValueError(f"--data_path {data_path} holds no .tfrecord files.")

    def names(list_file: str) -> set[str]:
        list_path = path / list_file
        if not list_path.exists():
            return set()
        return {line.strip() for line in list_path.read_text().splitlines() if line.strip()}

    test, dev = names(TEST_LIST_FILE), names(DEV_LIST_FILE)
    stem = lambda f: Path(f).stem  # noqa: E731
    if split == "test":
        if not test:
            raise ValueError(f"--data_path {data_path}: no {TEST_LIST_FILE} naming the test instances.")
        chosen = [f for f in files if stem(f) in test]
    else:
        chosen = [f for f in files if stem(f) not in test and stem(f) not in dev]
    if not chosen:
        raise ValueError(f"--data_path {data_path}: no .tfrecord files in the {split} split.")
    return chosen


def read_keypointnet(
    files: Sequence[str], image_size: int, max_elevation_rad: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[str]]:
    """Reads KeypointNet tfrecords: one file per instance, two views per example.

    Returns (RGBA uint8 [N, S, S, 4] tight crops with premultiplied RGB, Euler angles float32
    [N, 3], instance index int32 [N] (sorted), instance names = file stems). Views above
    ``max_elevation_rad`` or with an empty alpha channel are dropped (counted in the log).
    Raises ValueError naming the file when a record cannot be parsed or nothing is left.
    """
    images, eulers, instances, names = [], [], [], []
    dropped_elevation = dropped_empty = 0

    def decode(serialized):
        example = _parse_example(serialized)
        views = [tight_crop(tf.image.decode_png(example[f"img{v}"], channels=4), image_size) for v in (0, 1)]
        return tf.stack([v[0] for v in views]), tf.stack([v[1] for v in views]), tf.stack([example["mv0"], example["mv1"]])

    for file in files:
        dataset = tf.data.TFRecordDataset(file).map(decode, num_parallel_calls=tf.data.AUTOTUNE).batch(64)
        kept_images, kept_euler = [], []
        try:
            for crops, valid, modelviews in dataset:
                crops = crops.numpy().reshape(-1, image_size, image_size, 4)
                valid = valid.numpy().reshape(-1)
                euler = matrix_to_euler(rotation_from_modelview(modelviews.numpy().reshape(-1, 16)))
                high = euler[:, 1] > max_elevation_rad
                dropped_elevation += int(np.sum(high & valid))
                dropped_empty += int(np.sum(~valid))
                keep = valid & ~high
                kept_images.append(crops[keep])
                kept_euler.append(euler[keep])
        except tf.errors.OpError as error:
            message = getattr(error, "message", str(error)).splitlines()[0]
            raise ValueError(f"Cannot read KeypointNet records from {file}: {message}") from None
        count = sum(len(e) for e in kept_euler)
        if count == 0:
            logger.warning("%s: no views left after the elevation filter; instance skipped.", file)
            continue
        instances.append(np.full(count, len(names), np.int32))
        names.append(Path(file).stem)
        images += kept_images
        eulers += kept_euler
    if dropped_elevation or dropped_empty:
        logger.info(
            "KeypointNet: dropped %d views above %.2f rad elevation and %d with an empty alpha channel.",
            dropped_elevation, max_elevation_rad, dropped_empty,
        )
    if not names:
        raise ValueError(f"No KeypointNet views left in {len(files)} file(s) after the elevation filter ({max_elevation_rad} rad).")
    return (
        np.concatenate(images), np.concatenate(eulers).astype(np.float32), np.concatenate(instances), names,
    )


# ----------------------------------------------------------------------------- real images


def load_real_folder(path: str, image_size: int, flag: str = "--real_data_path") -> np.ndarray:
    """All images under ``path`` (recursive; PNG, JPEG, BMP, GIF, PGM/PPM) as uint8
    [N, S, S, 3], resized (stretched) to S x S. Raises ValueError naming ``flag`` when there
    are none."""
    root = Path(path)
    if not root.is_dir():
        raise ValueError(f"{flag} {path} is not a folder of images.")
    files = sorted(
        str(p) for p in root.rglob("*")
        if p.is_file() and not p.name.startswith(".") and p.suffix.lower() in folders.IMAGE_EXTENSIONS
    )
    if not files:
        raise ValueError(f"{flag} {path} holds no images ({', '.join(folders.IMAGE_EXTENSIONS)}).")
    return folders.load_images(files, image_size, 3)


def read_pose_list(list_path: str, image_dir: str | None, image_size: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Reads a Pascal3D+-style test list: one object per line,
    ``image left top right bottom azimuth elevation tilt`` (box in 1-based inclusive pixels,
    angles in degrees, Pascal3D+ convention; '#' starts a comment).

    Each box is cut from its image (``image_dir``/image; default: the list's folder), clipped
    to the image, and resized to ``image_size`` (stretched). Returns (uint8 [N, S, S, 3],
    rotations float64 [N, 3, 3], Euler angles float64 [N, 3] in radians, authors'
    convention via :func:`abc_tf.geometry.pascal3d_to_euler`).
    """
    if not os.path.isfile(list_path):
        raise ValueError(f"--pose_test_list {list_path} does not exist.")
    image_dir = image_dir or os.path.dirname(os.path.abspath(list_path))
    crops, angles = [], []
    decoded: dict[str, np.ndarray] = {}
    with open(list_path) as handle:
        lines = handle.read().splitlines()
    for number, line in enumerate(lines, start=1):
        text = line.split("#", 1)[0].strip()
        if not text:
            continue
        fields = text.split()
        where = f"{list_path}, line {number}"
        if len(fields) != 8:
            raise ValueError(f"{where}: expected 'image left top right bottom azimuth elevation tilt', got {len(fields)} fields.")
        try:
            left, top, right, bottom, azimuth, elevation, tilt = (float(v) for v in fields[1:])
        except ValueError:
            raise ValueError(f"{where}: the box and angles must be numbers, got {fields[1:]}.") from None
        path = os.path.join(image_dir, fields[0])
        if path not in decoded:
            if not os.path.isfile(path):
                raise ValueError(f"{where}: image {path} does not exist (--pose_test_images).")
            decoded[path] = folders.read_image(path, 3)
        image = decoded[path]
        height, width = image.shape[:2]
        # 1-based inclusive -> 0-based half-open, clipped to the image.
        y0, y1 = max(0, int(round(top)) - 1), min(height, int(round(bottom)))
        x0, x1 = max(0, int(round(left)) - 1), min(width, int(round(right)))
        if y1 <= y0 or x1 <= x0:
            raise ValueError(f"{where}: the box ({left}, {top}, {right}, {bottom}) is empty inside the {width}x{height} image.")
        crops.append(image[y0:y1, x0:x1])
        angles.append((azimuth, elevation, tilt))
    if not crops:
        raise ValueError(f"--pose_test_list {list_path} names no objects.")
    angles_arr = np.array(angles)
    euler = pascal3d_to_euler(angles_arr[:, 0], angles_arr[:, 1], angles_arr[:, 2])
    return folders.resize_images(crops, image_size), euler_to_matrix(euler), euler


# ----------------------------------------------------------------------------- procedural data


def _supersample(size: int) -> int:
    """2x2 rays per pixel for small images (antialiasing), 1 above 64 px (cost)."""
    return 2 if size <= 64 else 1


@functools.lru_cache(maxsize=4)
def _procedural_banks(category: str, size: int, max_elev: float, sizes: ProceduralSizes) -> PoseBanks:
    rng = np.random.default_rng([render.CATEGORIES.index(category), 0xBA4C])
    count = sizes.train_instances * sizes.views_per_instance
    instances = np.repeat(np.arange(sizes.train_instances), sizes.views_per_instance).astype(np.int32)
    euler = render.sample_viewpoints(rng, count, max_elev)
    synthetic, _ = render.render_synthetic(category, "train", instances, euler, size, _supersample(size))
    real_count = sizes.real_train_images
    real_ids = np.arange(real_count) // max(1, sizes.real_views_per_instance)
    real_euler = render.sample_viewpoints(rng, real_count, max_elev, tilt_std=0.05)
    real, _ = render.render_real(category, "real_train", real_ids, real_euler, size, seed=1, supersample=_supersample(size))
    names = [f"{category}_{i:04d}" for i in range(sizes.train_instances)]
    return PoseBanks(synthetic, euler.astype(np.float32), instances, names, real, _builtin_backgrounds(size, sizes))


@functools.lru_cache(maxsize=4)
def _builtin_backgrounds(size: int, sizes: ProceduralSizes) -> np.ndarray:
    """The built-in backgrounds: procedural clutter scenes (no objects), uint8 [K, S, S, 3]."""
    rng = np.random.default_rng([0xB6, 0xC1])  # its own stream: not the real images' clutter
    # In chunks: the scenes are drawn in float64 (1000 at 128 px would be 393 MB at once).
    counts = [min(100, sizes.background_images - start) for start in range(0, sizes.background_images, 100)]
    return np.concatenate([render.to_uint8(render.clutter_backgrounds(rng, count, size)) for count in counts])


def load_backgrounds(config: ExperimentConfig) -> np.ndarray:
    """The images painted behind the renders: ``background_data_path`` or the built-in ones."""
    if config.background_data_path:
        return load_real_folder(config.background_data_path, config.image_size, "--background_data_path")
    return _builtin_backgrounds(config.image_size, PROCEDURAL)


def load_banks(config: ExperimentConfig) -> PoseBanks:
    """The training renders, unlabelled real images and backgrounds of ``config``."""
    check_config(config)
    size, elev = config.image_size, max_elevation(config)
    if config.data_source == "procedural":
        banks = _procedural_banks(config.pose_category, size, elev, PROCEDURAL)
        if config.background_data_path:
            banks = dataclasses.replace(banks, backgrounds=load_backgrounds(config))
        return banks
    synthetic, euler, instances, names = read_keypointnet(keypointnet_files(config.data_path, "train"), size, elev)
    if config.real_data_path:
        real = load_real_folder(config.real_data_path, size)
    else:
        real = np.zeros((0, size, size, 3), np.uint8)
    return PoseBanks(synthetic, euler, instances, names, real, load_backgrounds(config))


def labelled_images(
    config: ExperimentConfig, split: str, domain: str, num_images: int | None = None, seed: int = 0
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Images with known pose, for evaluation (never for ABC training).

    split: "train" = instances used in training (the lookup dictionary: their poses never enter
      ABC training) or "test" = held-out instances. domain: "synthetic" = clean renders on
      black, or "real" = the real domain (procedural: other materials, lighting, clutter,
      noise, blur; files: the Pascal3D+-style ``--pose_test_list``, split "test" only).
    num_images: how many (None: all the files hold, or 1800 train / 500 test procedural);
      fewer files than asked gives all of them; a random subset (``seed``) otherwise.
    Returns (uint8 [n, S, S, 3], rotations float64 [n, 3, 3], Euler angles float64 [n, 3] in
    radians). Procedural images are rendered deterministically from ``seed``.
    """
    check_config(config)
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, got {split!r}.")
    if domain not in DOMAINS:
        raise ValueError(f"domain must be one of {DOMAINS}, got {domain!r}.")
    if num_images is not None and num_images <= 0:
        raise ValueError(f"num_images must be positive, got {num_images}.")
    size, elev = config.image_size, max_elevation(config)
    rng = np.random.default_rng([int(seed), SPLITS.index(split), DOMAINS.index(domain), 0x1AB])
    if config.data_source == "procedural":
        sizes = PROCEDURAL
        count = num_images or (sizes.dictionary_images if split == "train" else sizes.test_images)
        pool_size = sizes.train_instances if split == "train" else sizes.test_instances
        instance_ids = rng.integers(0, pool_size, count)
        real = domain == "real"
        euler = render.sample_viewpoints(rng, count, elev, tilt_std=0.05 if real else 0.0)
        if real:
            images, rotations = render.render_real(
                config.pose_category, split, instance_ids, euler, size, seed=int(rng.integers(1 << 31)),
                supersample=_supersample(size),
            )
        else:
            rgba, rotations = render.render_synthetic(config.pose_category, split, instance_ids, euler, size, _supersample(size))
            images = rgba[..., :3]  # premultiplied RGB = composited on black
        return images, rotations, euler
    if domain == "real":
        if split != "test":
            raise ValueError("The real images of --real_data_path carry no pose; labelled real images come from --pose_test_list (split 'test').")
        if not config.pose_test_list:
            raise ValueError("Labelled real images need --pose_test_list (a Pascal3D+-style list).")
        images, rotations, euler = read_pose_list(config.pose_test_list, config.pose_test_images or None, size)
    else:
        rgba, euler, _, _ = read_keypointnet(keypointnet_files(config.data_path, split), size, elev)
        images = rgba[..., :3]
        euler = euler.astype(np.float64)
        rotations = euler_to_matrix(euler)
    if num_images is not None and num_images < len(images):
        chosen = np.sort(rng.choice(len(images), num_images, replace=False))
        images, rotations, euler = images[chosen], rotations[chosen], euler[chosen]
    return images, rotations, euler


# ----------------------------------------------------------------------------- batches


def _sample_within(offsets: tf.Tensor, counts: tf.Tensor, group_ids: tf.Tensor, set_size: int, max_count: int,
                   seed: tf.Tensor, replace: bool) -> tf.Tensor:
    """``set_size`` row indices inside each chosen instance: int64 [P, set_size].

    Without replacement: random keys over the instance's slots (padded to the largest
    instance, padding keys pushed past every real key), the smallest ``set_size`` win.
    """
    pairs = tf.shape(group_ids)[0]
    count = tf.gather(counts, group_ids)[:, tf.newaxis]
    if replace:
        draws = tf.random.stateless_uniform([pairs, set_size], seed=seed)
        positions = tf.cast(tf.floor(draws * tf.cast(count, tf.float32)), tf.int64)
        positions = tf.minimum(positions, count - 1)
    else:
        keys = tf.random.stateless_uniform([pairs, max_count], seed=seed)
        keys = tf.where(tf.range(max_count, dtype=tf.int64)[tf.newaxis, :] < count, keys, 2.0)
        _, positions = tf.math.top_k(-keys, k=set_size, sorted=False)
        positions = tf.cast(positions, tf.int64)
    return tf.gather(offsets, group_ids)[:, tf.newaxis] + positions


def step_indices(banks: PoseBanks, config: ExperimentConfig, seed: int) -> Callable[[tf.Tensor], dict[str, tf.Tensor]]:
    """Returns ``f(step) -> dict`` of the rows a step draws (index arithmetic, stateless):
    ``index_a`` int64 [P, N] (one instance per row), ``index_b`` int64 [P, M] synthetic rows,
    ``index_real`` int64 [P, M] real rows, ``real_b`` bool [P, M] (the first ``floor(f M + u)``
    slots of each set B are real), ``fraction`` float32 (the schedule's value at ``step``)."""
    pairs, set_size = config.pairs_per_step, config.set_size
    counts = banks.counts
    replace = config.sample_with_replacement
    eligible = np.flatnonzero(counts >= (1 if replace else set_size))
    if len(eligible) == 0:
        raise ValueError(
            f"--set_size={set_size}: no instance has that many views (most: {int(counts.max())}). "
            "Lower --set_size or pass --sample_with_replacement."
        )
    total = len(banks.instances)
    if total < set_size:
        raise ValueError(f"--set_size={set_size} exceeds the {total} renders (unconstrained set B).")
    num_real = len(banks.real)
    if config.real_fraction > 0 and num_real == 0:
        raise ValueError("--real_fraction > 0 but there are no real images (--real_data_path).")
    offsets_t = tf.constant(banks.offsets, tf.int64)
    counts_t = tf.constant(counts, tf.int64)
    eligible_t = tf.constant(eligible, tf.int64)
    max_count = int(counts[eligible].max())
    base_seed = tf.constant([seed, 0x9053], tf.int64)

    def indices(step: tf.Tensor) -> dict[str, tf.Tensor]:
        step = tf.cast(step, tf.int64)
        seeds = tf.random.experimental.stateless_split(tf.random.experimental.stateless_fold_in(base_seed, step), num=5)
        choice = tf.random.stateless_uniform([pairs], seeds[0], 0, len(eligible), dtype=tf.int64)
        index_a = _sample_within(offsets_t, counts_t, tf.gather(eligible_t, choice), set_size, max_count, seeds[1], replace)
        keys = tf.random.stateless_uniform([pairs, total], seeds[2])
        _, index_b = tf.math.top_k(-keys, k=set_size, sorted=False)
        fraction = schedules.real_fraction(step, config.real_fraction, config.titration_interval, config.steps)
        jitter = tf.random.stateless_uniform([pairs], seeds[3])
        real_count = tf.floor(fraction * set_size + jitter)
        real_b = tf.cast(tf.range(set_size), tf.float32)[tf.newaxis, :] < real_count[:, tf.newaxis]
        index_real = tf.random.stateless_uniform([pairs, set_size], seeds[4], 0, max(num_real, 1), dtype=tf.int64)
        return {"index_a": index_a, "index_b": tf.cast(index_b, tf.int64), "index_real": index_real,
                "real_b": real_b, "fraction": fraction}

    return indices


def _to_uint8(images: tf.Tensor) -> tf.Tensor:
    return tf.cast(tf.clip_by_value(tf.round(images * 255.0), 0.0, 255.0), tf.uint8)


def make_dataset(config: ExperimentConfig, seed: int, start_step: int = 0) -> tf.data.Dataset:
    """Endless pose batches (see the module docstring); the first batch is step ``start_step``."""
    banks = load_banks(config)
    return dataset_from_banks(banks, config, seed, start_step)


def dataset_from_banks(banks: PoseBanks, config: ExperimentConfig, seed: int, start_step: int = 0) -> tf.data.Dataset:
    """The batches of :func:`make_dataset` drawn from given banks (tests pass small ones)."""
    if start_step < 0:
        raise ValueError(f"start_step must be >= 0, got {start_step}.")
    indices_of = step_indices(banks, config, seed)
    # Variables, not constants: a captured constant is serialised into the dataset graph (2 GB limit).
    synthetic = tf.Variable(banks.synthetic, trainable=False, name="pose_renders")
    euler = tf.constant(banks.euler, tf.float32)
    has_real = len(banks.real) > 0
    real = tf.Variable(banks.real if has_real else np.zeros((1,) + banks.synthetic.shape[1:3] + (3,), np.uint8),
                       trainable=False, name="pose_real_images")
    # Backgrounds come from their own pool, never from the real images of set B (module docstring).
    backgrounds = None
    if len(banks.backgrounds):
        backgrounds = tf.Variable(banks.backgrounds, trainable=False, name="pose_backgrounds")
    crop, colour = float(config.crop_amplitude), float(config.augmentation_amplitude)
    views = 2 if config.double_augmentation else 1
    aug_seed = tf.constant([seed, 0xA06], tf.int64)

    # Plain graph code (no Python control flow on tensors): skipping AutoGraph's conversion
    # of the augmentation functions saves seconds of tracing.
    @tf.autograph.experimental.do_not_convert
    def make_batch(step: tf.Tensor) -> dict[str, tf.Tensor]:
        chosen = indices_of(step)
        rgba_a = tf.gather(synthetic, chosen["index_a"])
        rgba_b = tf.gather(synthetic, chosen["index_b"])
        photos = tf.gather(real, chosen["index_real"])
        photos = tf.concat([photos, tf.fill(tf.concat([tf.shape(photos)[:-1], [1]], 0), tf.constant(255, tf.uint8))], -1)
        real_b = chosen["real_b"]
        rgba_b = tf.where(real_b[..., tf.newaxis, tf.newaxis, tf.newaxis], photos, rgba_b)
        seeds = tf.random.experimental.stateless_split(tf.random.experimental.stateless_fold_in(aug_seed, step), num=4)
        batch = {"labels_a": tf.gather(euler, chosen["index_a"]), "real_b": real_b}
        for key, rgba, is_real, offset in (("set_a", rgba_a, tf.zeros_like(real_b), 0), ("set_b", rgba_b, real_b, 2)):
            images = tf.cast(rgba, tf.float32) / 255.0
            for view in range(views):
                out = augment.pose_augment(images, is_real, backgrounds, crop, colour, seeds[offset + view])
                batch[key if view == 0 else key + "_view2"] = _to_uint8(out)
        return batch

    dataset = tf.data.Dataset.counter(start=start_step, dtype=tf.int64).map(
        make_batch, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True
    )
    return dataset.prefetch(2)


# ----------------------------------------------------------------------------- training hooks


class TitrationLogger(keras.callbacks.Callback):
    """Adds ``real_fraction`` to the epoch logs: the titration schedule of the pose data
    (:func:`abc_tf.schedules.real_fraction`) at the last trained step, so a TensorBoard
    callback placed AFTER this one plots it next to the loss. The value is computed from the
    optimizer's step, the same formula the data pipeline uses, so it stays right after resume.
    """

    def __init__(self, target: float, interval: int, total_steps: int):
        super().__init__()
        self.target, self.interval, self.total_steps = float(target), int(interval), int(total_steps)

    def on_epoch_end(self, epoch, logs=None):
        if logs is None:
            return
        step = max(0, int(keras.ops.convert_to_numpy(self.model.optimizer.iterations)) - 1)
        logs["real_fraction"] = schedules.real_fraction(step, self.target, self.interval, self.total_steps)


def training_callbacks(config: ExperimentConfig) -> list[keras.callbacks.Callback]:
    """Callbacks training adds before its TensorBoard callback: the titration logger
    (``real_fraction`` in TensorBoard)."""
    return [TitrationLogger(config.real_fraction, config.titration_interval, config.steps)]


FAMILY = DataFamily(
    name="pose",
    # augmentations: pose refuses it with its own message (check_config).
    fields=("image_size", "image_channels", "sample_with_replacement", "pose_category", "max_elevation",
            "real_fraction", "titration_interval", "crop_amplitude", "augmentation_amplitude", "real_data_path",
            "background_data_path", "pose_test_list", "pose_test_images", "augmentations", "double_augmentation",
            "regression_weight"),
    image_shape=image_shape,
    make_dataset=make_dataset,
    check_config=check_config,
    training_callbacks=training_callbacks,
    pose_views=labelled_images,
)
