"""ABC on the user's own data, family ``folders``: a directory with one sub-folder per group.

Layout::

    data_path/
      car_red/  img_000.png img_001.png ...      one group = images that share the inactive
      car_blue/ frame_0001.jpg ...                factors (one object, one video, one person)
      labels.csv                                  optional, for evaluation only

Every image under a group folder, searched recursively, belongs to the group; the formats are in
:mod:`abc_tf.data.folders.image_files`. ``labels.csv`` (:mod:`abc_tf.data.folders.labels_csv`) labels images
for evaluation; they never enter training. The loaders' docstrings give the choices on messy input, tested
in tests/test_folders.py. Extended YaleB and EPFL cars use the same machinery through
:func:`file_layout_family`. Their groups are a person and pose, or a car's sequence.
"""

from __future__ import annotations

import logging
import os
import types
from pathlib import Path
from typing import Callable

import numpy as np
import tensorflow as tf

from abc_tf.config import ExperimentConfig, SetBatch
from abc_tf.data import augment
from abc_tf.data.family import DataFamily, DataSources, GroupedImages
from abc_tf.data.groups import CHUNK_STEPS, chunk_rng, draw_stream
from abc_tf.data.folders.image_files import IMAGE_EXTENSIONS, is_image_file, load_images
from abc_tf.data.folders.labels_csv import LABELS_FILE, encode_labels, read_labels_csv
from abc_tf.data.folders import ImageFolderConfig

logger = logging.getLogger(__name__)


# ----------------------------------------------------------------------------- grouped images


def scan_groups(root: str | os.PathLike) -> tuple[list[str], list[list[str]]]:
    """The sorted group folders of ``root`` and each one's sorted image files, as relative paths.

    Raises ValueError when ``root`` is no directory or holds no group folders.
    """
    root_path = Path(root)
    if not str(root):
        raise ValueError("--data.path is empty: give the directory that holds one sub-folder per group.")
    if not root_path.is_dir():
        raise ValueError(f"--data.path {root} is not a directory (one sub-folder per group expected).")
    group_dirs = sorted(p for p in root_path.iterdir() if p.is_dir() and not p.name.startswith("."))
    if not group_dirs:
        raise ValueError(
            f"--data.path {root} holds no sub-folders; put each group's images in a folder of its own."
        )
    loose = [p.name for p in root_path.iterdir() if is_image_file(p)]
    if loose:
        logger.warning(
            "%s: %d image(s) directly in the data directory belong to no group and are ignored (e.g. %s).",
            root,
            len(loose),
            loose[0],
        )
    files = [
        sorted(str(p.relative_to(root_path)) for p in group_dir.rglob("*") if is_image_file(p))
        for group_dir in group_dirs
    ]
    return [p.name for p in group_dirs], files


def load_grouped_folder(
    root: str | os.PathLike, image_size: int, channels: int, labels_csv: str | os.PathLike | None = None
) -> GroupedImages:
    """Reads a directory of group folders into :class:`GroupedImages`.

    Labels: ``group``, the folder, always. Also the columns of ``labels_csv``, by default
    ``root/labels.csv`` when it exists. Empty groups are kept with count 0; the set sampler skips
    groups that are too small.
    On messy input:
      - an image that cannot be decoded raises ValueError naming the file, since dropping data
        silently hides problems;
      - images of mixed sizes are all stretched to ``image_size`` x ``image_size``, bilinear with
        antialiasing;
      - mixed channel counts become ``image_channels``: luma for RGB -> 1, repetition for gray ->
        3, alpha dropped.
    """
    group_names, group_files = scan_groups(root)
    files = [file for names in group_files for file in names]
    groups = np.repeat(np.arange(len(group_names), dtype=np.int32), [len(names) for names in group_files])
    if not files:
        raise ValueError(
            f"--data.path {root}: no images in any group folder (formats: {', '.join(IMAGE_EXTENSIONS)})."
        )
    labels = {"group": groups.copy()}
    label_values = {"group": np.array(group_names, dtype=object)}
    if labels_csv is None and os.path.exists(os.path.join(root, LABELS_FILE)):
        labels_csv = os.path.join(root, LABELS_FILE)
    if labels_csv:  # read before the images: a bad CSV fails in a moment, not after decoding them all
        if not os.path.exists(labels_csv):
            raise ValueError(f"Label CSV {labels_csv} does not exist.")
        for name, values in read_labels_csv(labels_csv, files).items():
            if name == "group":
                raise ValueError(
                    f"{labels_csv}: the column name 'group' is reserved for the folder of each image."
                )
            labels[name], label_values[name] = encode_labels(values)
    images = load_images([os.path.join(root, file) for file in files], image_size, channels)
    return GroupedImages(images, group_names, groups, files, labels, label_values)


# ----------------------------------------------------------------------------- set sampling


def grouped_set_dataset(
    grouped: GroupedImages,
    config: ExperimentConfig,
    seed: int,
    set_size: int | None = None,
) -> tf.data.Dataset:
    """Endless batches {"set_a", "set_b"[, views 2]}: [P, S, H, W, C] drawn within groups.

    Per pair, set A is ``set_size`` distinct images of one group; eligible groups are drawn
    uniformly. Set B is the same from another group. With ``config.curate_both_sets=False`` it is
    ``set_size`` distinct images of the whole collection.
    Groups smaller than a set, empty ones too, are skipped with a warning. If fewer groups remain
    than sets need, a ValueError names the small groups. Curated set B needs 2, else 1.
    ``config.data.augmentations`` (S8.4) apply per image, twice under
    ``config.batch.double_augmentation``. Batches are then float32 in [0, 1], else uint8.
    Batch t depends only on seed and t (:func:`abc_tf.data.groups.draw_stream`), so it is
    reproducible and parallel.
    """
    index = grouped.group_index()
    set_size = config.batch.set_size if set_size is None else set_size
    pairs = config.batch.pairs_per_step
    augmentations = augment.parse_augmentations(config.data.augmentations)
    augment.validate_augmentations(augmentations)
    unconstrained = not config.data.curate_both_sets
    eligible = index.eligible(set_size, needed=1 if unconstrained else 2)
    if unconstrained and index.num_items < set_size:
        raise ValueError(
            f"--batch.set_size={set_size} exceeds the {index.num_items} images of the collection "
            "(unconstrained set B)."
        )

    def draw_chunk(chunk: int) -> tuple[np.ndarray, np.ndarray]:
        rng = chunk_rng(seed, chunk)
        rows = CHUNK_STEPS * pairs
        group_a = index.draw_groups(rng, rows, among=eligible)
        set_a = index.draw_within(rng, group_a, set_size)
        if unconstrained:
            set_b = index.draw_from_all(rng, rows, set_size)
        else:
            set_b = index.draw_within(
                rng, index.draw_groups(rng, rows, among=eligible, exclude=group_a), set_size
            )
        return set_a.reshape(CHUNK_STEPS, pairs, set_size), set_b.reshape(CHUNK_STEPS, pairs, set_size)

    images = tf.constant(grouped.images)
    base_seed = tf.constant([seed, 0x5E75], tf.int64)

    def make_batch(step: tf.Tensor, rows: tuple[tf.Tensor, tf.Tensor]) -> dict[str, tf.Tensor]:
        batch = {"set_a": tf.gather(images, rows[0]), "set_b": tf.gather(images, rows[1])}
        if augmentations or config.batch.double_augmentation:
            augment_seed = tf.random.experimental.stateless_fold_in(base_seed, step)
            batch = augment.double_augment(
                batch, augmentations, augment_seed, double=config.batch.double_augmentation
            )
        return batch

    dataset = draw_stream(draw_chunk, [tf.int64] * 2, [(pairs, set_size)] * 2).map(
        make_batch, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True
    )
    return dataset.prefetch(tf.data.AUTOTUNE)


def set_dataset(
    images: np.ndarray, groups: np.ndarray, set_size: int = 32, pairs: int = 1, seed: int = 0, **data
) -> tf.data.Dataset:
    """Endless {"set_a", "set_b"} batches [pairs, set_size, H, W, C] from images [N, H, W, C] and
    their group labels [N], any values: each set is drawn within one group, as
    :func:`grouped_set_dataset` draws them. ``data``: fields of ``ImageFolderConfig``, e.g.
    ``augmentations``.
    """
    order = np.argsort(groups, kind="stable")
    names, groups = np.unique(np.asarray(groups)[order], return_inverse=True)
    grouped = GroupedImages(np.asarray(images)[order], [str(name) for name in names], groups, [])
    # grouped_set_dataset reads only these two parts of a run's config.
    parts = types.SimpleNamespace(
        batch=SetBatch(set_size=set_size, pairs_per_step=pairs), data=ImageFolderConfig(**data)
    )
    return grouped_set_dataset(grouped, parts, seed)


# ----------------------------------------------------------------------------- family interface


def image_shape(config: ExperimentConfig) -> tuple[int, int, int]:
    """image_size, image_size, image_channels."""
    return (config.data.image_size, config.data.image_size, config.data.image_channels)


def check_config(config: ExperimentConfig) -> None:
    """Checks the image settings. Raises ValueError naming the flag."""
    if config.data.image_size <= 0:
        raise ValueError(f"--data.image_size must be positive, got {config.data.image_size}.")
    if config.data.image_channels not in (1, 3):
        raise ValueError(f"--data.image_channels must be 1 or 3, got {config.data.image_channels}.")


def load(config: ExperimentConfig, labels_csv: str | None = None) -> GroupedImages:
    """The grouped folder of ``config.data.path`` at the config's image size and channels."""
    check_config(config)
    return load_grouped_folder(
        config.data.path, config.data.image_size, config.data.image_channels, labels_csv
    )


def make_dataset(config: ExperimentConfig, seed: int, start_step: int = 0) -> tf.data.Dataset:
    """Set pairs drawn within the group folders of ``--data.path``; see the module docstring.

    ``start_step`` is unused: the trainer derives ``seed`` from it.
    """
    del start_step
    return grouped_set_dataset(load(config), config, seed)


# Fields of the image-folder families (folders, yaleb, epfl_cars).
def check_folders_config(config: ExperimentConfig) -> None:
    """The image settings, and ``inactive_factors``: a set is drawn within one group folder."""
    check_config(config)
    if config.data.inactive_factors != "group":
        raise ValueError(
            f"--data.inactive_factors={config.data.inactive_factors!r} for data=folders: a set is one group "
            "folder; use 'group'."
        )


def parse_inactive(text: str) -> str:
    return ",".join(sorted(part.strip().lower() for part in text.split(",") if part.strip()))


def _detect(path: str) -> str | None:
    return "files" if os.path.isdir(path) else None


def folder_sources(layout: str) -> DataSources:
    """The one source of an image-folder family: ``files``, a folder in ``layout``."""
    return DataSources(reading={"files": f"a folder of images, {layout}"}, detect=_detect)


def file_layout_family(name: str, read: Callable[[ExperimentConfig], GroupedImages]) -> DataFamily:
    """The declaration of family ``name``, whose data set ``read(config)`` loads.

    Each declaration binds its own reader, so neither asks ``config.data.family`` which one it
    is.
    """

    def load(config: ExperimentConfig, labels_csv: str | None = None) -> GroupedImages:
        """The data set from ``config.data.path``. Its labels come from the file names.

        ``labels_csv`` must be None.
        """
        if labels_csv is not None:
            raise ValueError(
                f"labels_csv applies to data=folders only; {name} labels come from its file names."
            )
        check_config(config)
        sources.resolve(name, config.data.source, config.data.path)
        return read(config)

    def make_dataset(config: ExperimentConfig, seed: int, start_step: int = 0) -> tf.data.Dataset:
        """Set pairs of one person and pose, or of one car, per ``config``.

        ``start_step`` is unused: the trainer derives ``seed`` from it.
        """
        del start_step
        return grouped_set_dataset(load(config), config, seed)

    sources = folder_sources(f"the {name} data set as distributed (abc_tf/data/{name}/family.py)")
    # 64x64x1 faces, 64x64x3 cars in the presets: the image shape of the folders family.
    return DataFamily(
        name=name,
        config=ImageFolderConfig,
        image_shape=image_shape,
        streams={"sets": make_dataset},
        check_config=check_config,
        grouped_images=load,
        evaluation_task="labels",
        sources=sources,
    )


FAMILY = DataFamily(
    name="folders",
    config=ImageFolderConfig,
    evaluation_task="labels",
    image_shape=image_shape,
    streams={"sets": make_dataset},
    check_config=check_folders_config,
    grouped_images=load,
    sources=folder_sources("one subfolder of images per group (a set is drawn within one)"),
)
