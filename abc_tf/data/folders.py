"""ABC on the user's own data: a directory with one sub-folder per group (family ``folders``).

Layout::

    data_path/
      car_red/  img_000.png img_001.png ...      one group = images that share the inactive
      car_blue/ frame_0001.jpg ...                factors (one object, one video, one person)
      labels.csv                                  optional, for evaluation only

Every image under a group folder (searched recursively) belongs to the group. Formats: PNG,
JPEG, BMP and GIF (first frame) through ``tf.io.decode_image``, and binary or ASCII PGM/PPM/PNM
(8 or 16 bit) through Pillow (TensorFlow has no PNM decoder). Hidden files and other
extensions are ignored. The optional ``labels.csv`` names each image by its path relative to
``data_path`` (column ``filename``, ``file``, ``path`` or ``image``; else the first column) and
holds any number of label columns (numbers or words); labels never enter training.

Documented choices on messy input (tested in tests/test_folders.py):

- an image that cannot be decoded raises ValueError naming the file (silently dropping data
  hides problems);
- images of mixed sizes are all resized (stretched, bilinear with antialiasing) to
  ``image_size`` x ``image_size``; mixed channel counts are converted to ``image_channels``
  (luma for RGB -> 1 channel, repetition for gray -> 3, alpha dropped);
- groups with fewer images than ``set_size`` (empty groups included) are skipped with a
  logged warning; if fewer groups remain than sets need (2 with a curated set B, else 1), a
  ValueError says which groups are too small;
- set A and set B come from two different groups; with ``--curate_both_sets=false`` set B is
  drawn from all images of all groups (unconstrained).

The same machinery serves Extended YaleB and EPFL cars (``abc_tf.data.faces_cars``): their
groups are a person (and pose) or a car's sequence.
"""

from __future__ import annotations

import csv
import dataclasses
import logging
import os
from pathlib import Path
from typing import Sequence

import numpy as np
import tensorflow as tf
from PIL import Image

from abc_tf import augment
from abc_tf.config import ExperimentConfig
from abc_tf.data.family import DataFamily, GroupedImages

logger = logging.getLogger(__name__)

TF_IMAGE_EXTENSIONS = (".png", ".jpg", ".jpeg", ".bmp", ".gif")
PNM_EXTENSIONS = (".pgm", ".ppm", ".pnm")
IMAGE_EXTENSIONS = TF_IMAGE_EXTENSIONS + PNM_EXTENSIONS
LABELS_FILE = "labels.csv"
_PATH_COLUMNS = ("filename", "file", "path", "image")
# Images resized per call of tf.image.resize; bounds the float32 memory of one call.
_RESIZE_CHUNK = 64


# ----------------------------------------------------------------------------- reading images


def _read_pnm(path: str) -> np.ndarray:
    """Netpbm PBM/PGM/PPM, ASCII or binary, 8 or 16 bit, through Pillow -> uint8 [H, W, 1 or 3].

    Pillow scales a maxval other than 255 to the full range of its mode: 0..255 for 8-bit
    files and for every PPM, 0..65535 (mode "I") for 16-bit PGM, rescaled here to 0..255.
    Raises ValueError naming the file when it is not a readable PNM file.
    """
    try:
        with Image.open(path, formats=["PPM"]) as image:
            if image.mode.startswith("I"):
                values = np.asarray(image, np.float64) * (255.0 / 65535.0)
                return np.clip(np.rint(values), 0, 255).astype(np.uint8)[..., np.newaxis]
            array = np.asarray(image.convert("L" if image.mode in ("1", "L") else "RGB"), np.uint8)
    except (OSError, ValueError, SyntaxError) as error:  # Pillow's errors for unreadable or corrupt files
        message = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise ValueError(f"Cannot read image {path} as PBM/PGM/PPM: {message}") from None
    return array[..., np.newaxis] if array.ndim == 2 else array


def _convert_channels(image: np.ndarray, channels: int) -> np.ndarray:
    """uint8 [H, W, c] with c in 1..4 -> [H, W, channels]: alpha dropped, luma or repetition."""
    if image.shape[-1] in (2, 4):
        image = image[..., :-1]  # drop alpha
    if image.shape[-1] == channels:
        return image
    if channels == 3:
        return np.repeat(image, 3, axis=-1)
    luma = image.astype(np.float32) @ np.array([0.2989, 0.5870, 0.1140], np.float32)
    return np.clip(np.rint(luma), 0, 255).astype(np.uint8)[..., np.newaxis]


def _read_with_pillow(path: str) -> np.ndarray | None:
    """uint8 [H, W, 1 or 3] by Pillow, or None when Pillow cannot read the file either."""
    try:
        with Image.open(path) as image:
            image = image.convert("L" if image.mode in ("1", "L", "I;16", "I", "F") else "RGB")
            array = np.asarray(image, np.uint8)
    except (OSError, ValueError, SyntaxError):  # Pillow's errors for unreadable or corrupt files
        return None
    return array[..., np.newaxis] if array.ndim == 2 else array


def read_image(path: str | os.PathLike, channels: int) -> np.ndarray:
    """Decodes one image file to uint8 [H, W, channels] at its own size.

    Raises ValueError naming the file when it cannot be read or decoded.
    """
    path = str(path)
    if channels not in (1, 3):
        raise ValueError(f"image_channels must be 1 or 3, got {channels}.")
    extension = os.path.splitext(path)[1].lower()
    try:
        if extension in PNM_EXTENSIONS:
            image = _read_pnm(path)
        else:
            encoded = tf.io.read_file(path)
            # channels=0 keeps the file's own channels; expand_animations=False: a GIF's first frame.
            image = tf.io.decode_image(encoded, channels=0, dtype=tf.uint8, expand_animations=False).numpy()
    except (tf.errors.OpError, OSError) as error:
        # TensorFlow's decoders miss some valid files (1-bit and palette BMPs); Pillow reads them.
        image = _read_with_pillow(path)
        if image is None:
            message = getattr(error, "message", str(error)).splitlines()[0]
            raise ValueError(f"Cannot read image {path}: {message}") from None
    if image.ndim != 3 or image.shape[0] == 0 or image.shape[1] == 0:
        raise ValueError(f"Cannot read image {path}: decoded shape {image.shape} is not [H, W, C].")
    return _convert_channels(image, channels)


def resize_images(images: Sequence[np.ndarray], size: int) -> np.ndarray:
    """Resizes uint8 images of any sizes to one uint8 array [N, size, size, C].

    Bilinear with antialiasing (no aliasing when shrinking 640x480 photos to 64x64); aspect
    ratios are not kept. Images of equal size are resized together, in chunks.
    """
    if not images:
        raise ValueError("resize_images got no images.")
    channels = images[0].shape[-1]
    out = np.empty((len(images), size, size, channels), np.uint8)
    by_shape: dict[tuple[int, ...], list[int]] = {}
    for index, image in enumerate(images):
        by_shape.setdefault(image.shape, []).append(index)
    for shape, indices in by_shape.items():
        if shape[:2] == (size, size):
            out[indices] = np.stack([images[i] for i in indices])
            continue
        for start in range(0, len(indices), _RESIZE_CHUNK):
            chunk = indices[start : start + _RESIZE_CHUNK]
            stacked = tf.constant(np.stack([images[i] for i in chunk]))
            resized = tf.image.resize(tf.cast(stacked, tf.float32), [size, size], method="bilinear", antialias=True)
            out[chunk] = tf.cast(tf.clip_by_value(tf.round(resized), 0.0, 255.0), tf.uint8).numpy()
    return out


def load_images(paths: Sequence[str | os.PathLike], size: int, channels: int) -> np.ndarray:
    """Reads and resizes files into uint8 [N, size, size, channels]; files are read one at a time."""
    if size <= 0:
        raise ValueError(f"image_size must be positive, got {size}.")
    decoded: list[np.ndarray] = []
    out: list[np.ndarray] = []
    for path in paths:
        decoded.append(read_image(path, channels))
        # Resize in chunks as we go, so full-size decoded images never pile up in memory.
        if len(decoded) == _RESIZE_CHUNK:
            out.append(resize_images(decoded, size))
            decoded = []
    if decoded:
        out.append(resize_images(decoded, size))
    if not out:
        return np.zeros((0, size, size, channels), np.uint8)
    return np.concatenate(out)


# ----------------------------------------------------------------------------- grouped images


def encode_labels(values: Sequence) -> tuple[np.ndarray, np.ndarray]:
    """Values (numbers or strings; None/'' = unknown) -> (int32 class index [N], sorted distinct values).

    Numbers sort numerically, words alphabetically; unknown entries get class -1.
    """
    present = [v for v in values if v is not None and v != "" and not (isinstance(v, float) and np.isnan(v))]
    numeric = all(isinstance(v, (int, float, np.integer, np.floating)) for v in present)
    distinct = np.array(sorted(set(present)), dtype=np.float64 if numeric else object)
    lookup = {value: index for index, value in enumerate(distinct.tolist())}
    codes = np.array([lookup.get(v, -1) if v is not None and v != "" else -1 for v in values], np.int32)
    return codes, distinct


def _normalise_path(text: str) -> str:
    """'./a\\b.png ' -> 'a/b.png': CSV paths compare with forward slashes, no leading './'."""
    text = text.strip().replace("\\", "/")
    while text.startswith("./"):
        text = text[2:]
    return text


def _typed_column(cells: list[str | None]) -> list[float | str | None]:
    """A column is numeric (floats) when every present cell parses as a number, else text."""
    present = [cell for cell in cells if cell is not None]
    try:
        numbers = {cell: float(cell) for cell in present}
    except ValueError:
        return list(cells)
    return [None if cell is None else numbers[cell] for cell in cells]


def read_labels_csv(path: str | os.PathLike, files: Sequence[str]) -> dict[str, list]:
    """Reads a label CSV: {column: [value per file]} aligned with ``files`` (relative paths).

    Rows are matched on the path relative to the data directory, or on the bare file name
    when that is unique. Columns of numbers become floats, others strings; a missing row or
    empty cell is None. A row naming no known image raises ValueError (a typo or wrong root).
    """
    path = str(path)
    # utf-8-sig: spreadsheet programs often start CSV files with a byte-order mark.
    try:
        with open(path, newline="", encoding="utf-8-sig") as handle:
            rows = list(csv.reader(handle))
    except UnicodeDecodeError as error:
        raise ValueError(
            f"{path} is not UTF-8 text (byte {error.object[error.start]:#x} at offset {error.start}); "
            "save the label CSV as UTF-8."
        ) from None
    except csv.Error as error:
        raise ValueError(f"{path} is not a readable CSV file ({error}).") from None
    if not rows:
        raise ValueError(f"{path}: the label CSV is empty (a header row is needed).")
    header = [name.strip() for name in rows[0]]
    lowered = [name.lower() for name in header]
    key_column = next((lowered.index(name) for name in _PATH_COLUMNS if name in lowered), 0)
    label_columns = [index for index in range(len(header)) if index != key_column]
    if not label_columns:
        raise ValueError(f"{path}: no label columns besides the file column {header[key_column]!r}.")
    normalised = [_normalise_path(file.replace(os.sep, "/")) for file in files]
    by_path = {file: index for index, file in enumerate(normalised)}
    basenames: dict[str, list[int]] = {}
    for index, file in enumerate(normalised):
        basenames.setdefault(file.rsplit("/", 1)[-1], []).append(index)
    cells: dict[str, list[str | None]] = {header[c]: [None] * len(files) for c in label_columns}
    for line_number, row in enumerate(rows[1:], start=2):
        if not any(cell.strip() for cell in row):
            continue
        if len(row) != len(header):
            raise ValueError(f"{path}, line {line_number}: {len(row)} cells, the header has {len(header)}.")
        name = _normalise_path(row[key_column])
        index = by_path.get(name)
        if index is None:
            candidates = basenames.get(name, [])
            if len(candidates) != 1:
                reason = (
                    "matches several images; give its path relative to the data directory"
                    if candidates
                    else "names no image of the data directory"
                )
                raise ValueError(f"{path}, line {line_number}: {name!r} {reason}.")
            index = candidates[0]
        for column in label_columns:
            cells[header[column]][index] = row[column].strip() or None
    return {name: _typed_column(column) for name, column in cells.items()}


def _is_image(path: Path) -> bool:
    return path.is_file() and not path.name.startswith(".") and path.suffix.lower() in IMAGE_EXTENSIONS


def scan_groups(root: str | os.PathLike) -> tuple[list[str], list[list[str]]]:
    """Group folders of ``root`` (sorted) and each one's image files (relative paths, sorted).

    Raises ValueError when ``root`` is no directory or holds no group folders.
    """
    root_path = Path(root)
    if not str(root):
        raise ValueError("--data_path is empty: give the directory that holds one sub-folder per group.")
    if not root_path.is_dir():
        raise ValueError(f"--data_path {root} is not a directory (one sub-folder per group expected).")
    group_dirs = sorted(p for p in root_path.iterdir() if p.is_dir() and not p.name.startswith("."))
    if not group_dirs:
        raise ValueError(f"--data_path {root} holds no sub-folders; put each group's images in a folder of its own.")
    loose = [p.name for p in root_path.iterdir() if _is_image(p)]
    if loose:
        logger.warning("%s: %d image(s) directly in the data directory belong to no group and are ignored (e.g. %s).", root, len(loose), loose[0])
    files = [
        sorted(str(p.relative_to(root_path)) for p in group_dir.rglob("*") if _is_image(p)) for group_dir in group_dirs
    ]
    return [p.name for p in group_dirs], files


def load_grouped_folder(
    root: str | os.PathLike, image_size: int, channels: int, labels_csv: str | os.PathLike | None = None
) -> GroupedImages:
    """Reads a directory of group folders into :class:`GroupedImages`.

    Labels: ``group`` (the folder) always; the columns of ``labels_csv`` (default
    ``root/labels.csv`` when it exists). Empty groups are kept here (count 0); the set
    sampler skips groups that are too small.
    """
    group_names, group_files = scan_groups(root)
    files = [file for names in group_files for file in names]
    groups = np.repeat(np.arange(len(group_names), dtype=np.int32), [len(names) for names in group_files])
    if not files:
        raise ValueError(f"--data_path {root}: no images in any group folder (formats: {', '.join(IMAGE_EXTENSIONS)}).")
    labels = {"group": groups.copy()}
    label_values = {"group": np.array(group_names, dtype=object)}
    if labels_csv is None and os.path.exists(os.path.join(root, LABELS_FILE)):
        labels_csv = os.path.join(root, LABELS_FILE)
    if labels_csv:  # read before the images: a bad CSV fails in a moment, not after decoding them all
        if not os.path.exists(labels_csv):
            raise ValueError(f"Label CSV {labels_csv} does not exist.")
        for name, values in read_labels_csv(labels_csv, files).items():
            if name == "group":
                raise ValueError(f"{labels_csv}: the column name 'group' is reserved for the folder of each image.")
            labels[name], label_values[name] = encode_labels(values)
    images = load_images([os.path.join(root, file) for file in files], image_size, channels)
    return GroupedImages(images, group_names, groups, files, labels, label_values)


# ----------------------------------------------------------------------------- set sampling


def eligible_groups(grouped: GroupedImages, set_size: int, needed: int, flag: str = "--set_size") -> np.ndarray:
    """Indices of groups with at least ``set_size`` images; warns about the others.

    Raises ValueError when fewer than ``needed`` groups are large enough.
    """
    counts = grouped.counts
    eligible = np.flatnonzero(counts >= set_size)
    skipped = [f"{grouped.group_names[g]} ({counts[g]})" for g in np.flatnonzero(counts < set_size)]
    if skipped:
        logger.warning(
            "%d group(s) hold fewer than %s=%d images and are skipped: %s",
            len(skipped), flag, set_size, ", ".join(skipped[:10]) + (" ..." if len(skipped) > 10 else ""),
        )
    if len(eligible) < needed:
        raise ValueError(
            f"{flag}={set_size}: only {len(eligible)} group(s) hold that many images, {needed} needed "
            f"(group sizes: {', '.join(f'{n}={c}' for n, c in zip(grouped.group_names[:20], counts[:20]))}"
            f"{' ...' if len(counts) > 20 else ''}). Lower {flag} or add images."
        )
    return eligible


def _sample_within(
    offsets: tf.Tensor, counts: tf.Tensor, group_ids: tf.Tensor, set_size: int, max_count: int, seed: tf.Tensor
) -> tf.Tensor:
    """S distinct image indices from each chosen group, uniformly without replacement.

    group_ids: [P] int. Returns int [P, S]: random keys over each group's slots (padded to
    the largest group, pads pushed past every real key), the S smallest keys win.
    """
    pairs = tf.shape(group_ids)[0]
    keys = tf.random.stateless_uniform([pairs, max_count], seed=seed, dtype=tf.float32)
    slots = tf.range(max_count, dtype=tf.int64)[tf.newaxis, :]
    valid = slots < tf.gather(counts, group_ids)[:, tf.newaxis]
    keys = tf.where(valid, keys, 2.0)
    _, positions = tf.math.top_k(-keys, k=set_size, sorted=False)
    return tf.gather(offsets, group_ids)[:, tf.newaxis] + tf.cast(positions, tf.int64)


def grouped_set_dataset(
    grouped: GroupedImages,
    config: ExperimentConfig,
    seed: int,
    set_size: int | None = None,
) -> tf.data.Dataset:
    """Endless batches {"set_a", "set_b"[, views 2]}: [P, S, H, W, C] drawn within groups.

    Per pair: set A is ``set_size`` images of one group (eligible groups uniformly), set B the
    same from another group, or with ``config.curate_both_sets=False`` ``set_size`` distinct
    images of the whole collection. ``config.augmentations`` (S8.4) are applied per image,
    twice under ``config.double_augmentation``; batches are then float32 in [0, 1], else uint8.
    Batch t depends only on (seed, t): stateless sampling, reproducible and parallel.
    """
    grouped.check_sorted()
    set_size = config.set_size if set_size is None else set_size
    pairs = config.pairs_per_step
    augmentations = augment.parse_augmentations(config.augmentations)
    augment.validate_augmentations(augmentations)
    unconstrained = not config.curate_both_sets
    eligible = eligible_groups(grouped, set_size, needed=1 if unconstrained else 2)
    total = len(grouped.groups)
    if unconstrained and total < set_size:
        raise ValueError(f"--set_size={set_size} exceeds the {total} images of the collection (unconstrained set B).")

    images = tf.constant(grouped.images)
    offsets = tf.constant(grouped.offsets, tf.int64)
    counts = tf.constant(grouped.counts, tf.int64)
    eligible_t = tf.constant(eligible, tf.int64)
    max_count = int(grouped.counts[eligible].max())
    num_eligible = len(eligible)
    base_seed = tf.constant([seed, 0x5E75], tf.int64)

    def make_batch(step: tf.Tensor) -> dict[str, tf.Tensor]:
        step_seed = tf.random.experimental.stateless_fold_in(base_seed, step)
        seeds = tf.random.experimental.stateless_split(step_seed, num=5)
        choice_a = tf.random.stateless_uniform([pairs], seeds[0], 0, num_eligible, dtype=tf.int64)
        group_a = tf.gather(eligible_t, choice_a)
        indices_a = _sample_within(offsets, counts, group_a, set_size, max_count, seeds[1])
        if unconstrained:
            keys = tf.random.stateless_uniform([pairs, total], seeds[2], dtype=tf.float32)
            _, indices_b = tf.math.top_k(-keys, k=set_size, sorted=False)
            indices_b = tf.cast(indices_b, tf.int64)
        else:
            # A shift in 1..G-1 modulo G: set B's group always differs from set A's.
            shift = tf.random.stateless_uniform([pairs], seeds[2], 1, num_eligible, dtype=tf.int64)
            group_b = tf.gather(eligible_t, (choice_a + shift) % num_eligible)
            indices_b = _sample_within(offsets, counts, group_b, set_size, max_count, seeds[3])
        batch = {"set_a": tf.gather(images, indices_a), "set_b": tf.gather(images, indices_b)}
        if augmentations or config.double_augmentation:
            batch = augment.double_augment(batch, augmentations, seeds[4], double=config.double_augmentation)
        return batch

    dataset = tf.data.Dataset.counter(dtype=tf.int64).map(
        make_batch, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True
    )
    return dataset.prefetch(tf.data.AUTOTUNE)


# ----------------------------------------------------------------------------- family interface


def image_shape(config: ExperimentConfig) -> tuple[int, int, int]:
    """(image_size, image_size, image_channels)."""
    return (config.image_size, config.image_size, config.image_channels)


def check_config(config: ExperimentConfig) -> None:
    """Checks the image settings; raises ValueError naming the flag."""
    if config.image_size <= 0:
        raise ValueError(f"--image_size must be positive, got {config.image_size}.")
    if config.image_channels not in (1, 3):
        raise ValueError(f"--image_channels must be 1 or 3, got {config.image_channels}.")


def load(config: ExperimentConfig, labels_csv: str | None = None) -> GroupedImages:
    """The grouped folder of ``config.data_path`` at the config's image size and channels."""
    check_config(config)
    return load_grouped_folder(config.data_path, config.image_size, config.image_channels, labels_csv)


def make_dataset(config: ExperimentConfig, seed: int, start_step: int = 0) -> tf.data.Dataset:
    """Set pairs drawn within the group folders of ``--data_path`` (see the module docstring).
    ``start_step`` is unused: the trainer derives ``seed`` from it."""
    del start_step
    return grouped_set_dataset(load(config), config, seed)


# Fields of the image-folder families (folders, yaleb, epfl_cars).
IMAGE_FOLDER_FIELDS = ("image_size", "image_channels", "curate_both_sets", "augmentations", "double_augmentation",
                       "eval_images")

def check_folders_config(config: ExperimentConfig) -> None:
    """The image settings, and ``inactive_factors``: a set is drawn within one group folder."""
    check_config(config)
    if config.inactive_factors != "group":
        raise ValueError(f"--inactive_factors={config.inactive_factors!r} for data=folders: a set is one group folder; use 'group'.")


FAMILY = DataFamily(
    name="folders",
    fields=IMAGE_FOLDER_FIELDS + ("inactive_factors",),
    image_shape=image_shape,
    make_dataset=make_dataset,
    check_config=check_folders_config,
    grouped_images=load,
)
