"""KeypointNet tfrecords (the synthetic renders of the pose family, ``--data.source=keypointnet``).

``data_path`` is a folder of KeypointNet tfrecords (or one file): one file per object
instance, each example two views ``img0``/``img1`` (PNG, RGBA) with modelview matrices
``mv0``/``mv1`` (16 float32). Files named in ``test.txt`` or ``dev.txt`` next to them are left
out of training (``test.txt`` forms the test split). Views above a maximum elevation are
dropped; each view is tight-cropped to its alpha channel and resized.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Sequence

import numpy as np
import tensorflow as tf

from abc_tf.geometry import matrix_to_euler

logger = logging.getLogger(__name__)

SPLITS = (
    "train",
    "test",
)  # the files' splits; the pose family adds "validation" (training instances held out)
TEST_LIST_FILE = "test.txt"  # KeypointNet: instances of the test split
DEV_LIST_FILE = "dev.txt"  # KeypointNet: validation instances, kept out of training

# KeypointNet renders ShapeNet models, whose frame has y up; the authors' Euler convention
# (abc_tf.geometry) has z up. Columns: the z-up basis vectors in ShapeNet coordinates
# (x -> x, y -> -z, z -> y), so R = R_modelview @ OBJECT_AXES. Elevation does not depend on
# this choice; a different horizontal axis would only offset every azimuth by a constant.
OBJECT_AXES = np.array([[1.0, 0.0, 0.0], [0.0, 0.0, 1.0], [0.0, -1.0, 0.0]])


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
            raise ValueError(
                f"--data.path {data_path} is one file; a test split needs a folder with {TEST_LIST_FILE}."
            )
        return [str(path)]
    if not path.is_dir():
        raise ValueError(f"--data.path {data_path} is neither a .tfrecord file nor a folder of them.")
    files = sorted(str(p) for p in path.iterdir() if p.suffix == ".tfrecord")
    if not files:
        raise ValueError(f"--data.path {data_path} holds no .tfrecord files.")

    def names(list_file: str) -> set[str]:
        list_path = path / list_file
        if not list_path.exists():
            return set()
        return {line.strip() for line in list_path.read_text().splitlines() if line.strip()}

    test, dev = names(TEST_LIST_FILE), names(DEV_LIST_FILE)
    stem = lambda f: Path(f).stem  # noqa: E731
    if split == "test":
        if not test:
            raise ValueError(f"--data.path {data_path}: no {TEST_LIST_FILE} naming the test instances.")
        chosen = [f for f in files if stem(f) in test]
    else:
        chosen = [f for f in files if stem(f) not in test and stem(f) not in dev]
    if not chosen:
        raise ValueError(f"--data.path {data_path}: no .tfrecord files in the {split} split.")
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
        return (
            tf.stack([v[0] for v in views]),
            tf.stack([v[1] for v in views]),
            tf.stack([example["mv0"], example["mv1"]]),
        )

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
            dropped_elevation,
            max_elevation_rad,
            dropped_empty,
        )
    if not names:
        raise ValueError(
            f"No KeypointNet views left in {len(files)} file(s) after the elevation filter "
            f"({max_elevation_rad} rad)."
        )
    return (
        np.concatenate(images),
        np.concatenate(eulers).astype(np.float32),
        np.concatenate(instances),
        names,
    )
