"""Shapes3D (docs/PAPERS.md sections 3 and 6): sets that isolate factors of DeepMind's 3dshapes.

The grid and its backends are :mod:`abc_tf.data.shapes3d.sources`; this module curates the
sets (:class:`abc_tf.data.factor_grid.SetCurator`, index arithmetic over the grid, or over the
records present for a partial tfds copy) and streams them.

Batches ("sets", abc_tf/data/family.py): ``{"set_a": [P, N, 64, 64, 3], "set_b": [P, N, 64, 64, 3]}`` uint8.
With ``--batch.augmentation_baseline``: ``{"set_a", "set_a_view2"}`` float32 in [0, 1], two
``random_hue(0.5)`` views of one unconstrained batch, for any method that trains on such
two-view sets (``Method.accepts_two_view_sets``: the contrastive loss, the paper's Fig. 3c
baseline and the ``shapes3d_hue_baseline`` preset, or ABC, the second view standing in for set
B). With ``--data.augmentations`` the sets are augmented (twice under ``--batch.double_augmentation``).
"""

from __future__ import annotations

import functools
import logging

import numpy as np
import tensorflow as tf

from abc_tf.config import ExperimentConfig
from abc_tf.data.shapes3d import Shapes3DConfig
from abc_tf.data import augment, augment_ops, factor_grid
from abc_tf.data.family import DataFamily, KnownFactors
from abc_tf.data.groups import GroupIndex, step_rng
from abc_tf.data.shapes3d import pairs as shapes3d_pairs
from abc_tf.data.shapes3d.pairs import make_pairs_dataset
from abc_tf.data.shapes3d.sources import (
    SOURCES,
    FACTOR_NAMES,
    FACTOR_SIZES,
    GRID,
    IMAGE_SHAPE,
    Source,
    open_source,
)

HUE_BASELINE_MAX_DELTA = 0.5  # tf.image.random_hue(image, 0.5), as the paper's baseline
HUE_FACTORS = ("floor_hue", "wall_hue", "object_hue")  # what the baseline's random hue varies

logger = logging.getLogger(__name__)


def image_shape(config: ExperimentConfig) -> tuple[int, int, int]:
    """(64, 64, 3) for every backend."""
    del config
    return IMAGE_SHAPE


def inactive_factors(config: ExperimentConfig) -> tuple[int, ...]:
    """Positions (in FACTOR_NAMES) of ``config.data.inactive_factors`` (none for "none"); ValueError
    on unknown names."""
    if config.data.inactive_factors.strip().lower() == "none":
        return ()
    return GRID.parse_factors(config.data.inactive_factors, flag="data.inactive_factors")


def _check_config(config: ExperimentConfig) -> tuple[tuple[int, ...], tuple[tuple[str, float], ...]]:
    """Checks the Shapes3D settings that need no data; returns (inactive factors, augmentations)."""
    config.validate()
    SOURCES.resolve("shapes3d", config.data.source, config.data.path)
    augmentations = augment.parse_augmentations(config.data.augmentations)
    augment.validate_augmentations(augmentations)
    if config.batch.augmentation_baseline:
        if augmentations or config.batch.double_augmentation:
            raise ValueError(
                "--batch.augmentation_baseline makes its own two random_hue(0.5) views; leave "
                "--data.augmentations and --batch.double_augmentation unset."
            )
        return (), augmentations
    if config.batch.double_augmentation and not augmentations:
        raise ValueError(
            "--batch.double_augmentation needs --data.augmentations (e.g. 'hue:0.1') to make the two views "
            "differ."
        )
    inactive = inactive_factors(config)
    if not inactive:
        raise ValueError(
            "--data.inactive_factors is empty: ABC needs at least one factor fixed within a set "
            f"(names {', '.join(FACTOR_NAMES)} or the digits 0-5)."
        )
    return inactive, augmentations


def make_curator(
    config: ExperimentConfig, source: Source, inactive: tuple[int, ...]
) -> factor_grid.SetCurator:
    """The set curator of ``config`` over ``source``'s items (ValueError on impossible set sizes)."""
    return factor_grid.SetCurator(
        GRID, inactive, config.batch.set_size, replace=config.data.sample_with_replacement, items=source.items
    )


def step_item_ids(
    curator: factor_grid.SetCurator, config: ExperimentConfig, seed: int, step: int
) -> tuple[np.ndarray, ...]:
    """Item ids of the sets of training step ``step``: ``(set_a, set_b)``, each int64 [P, N].

    Under ``augmentation_baseline`` only ``(set_a,)``, an unconstrained batch. Set B is
    curated like set A (its own random inactive values) or, with ``curate_both_sets`` off,
    unconstrained. A pure function of (seed, step).
    """
    rng = step_rng(seed, step)
    pairs = config.batch.pairs_per_step
    if config.batch.augmentation_baseline:
        return (curator.unconstrained(rng, pairs),)
    set_a = curator.curated(rng, pairs)
    set_b = curator.curated(rng, pairs) if config.data.curate_both_sets else curator.unconstrained(rng, pairs)
    return set_a, set_b


def make_dataset(config: ExperimentConfig, seed: int, start_step: int = 0) -> tf.data.Dataset:
    """Endless, prefetched set-pair batches of ``config`` (format in the module docstring).

    Each step's sets depend only on (seed, step), so a run is reproducible and its batches
    can be built in parallel. Every check of flags, files and set sizes runs here, before
    the dataset is returned. ``start_step`` is unused: the trainer derives ``seed`` from it.
    """
    del start_step
    inactive, augmentations = _check_config(config)
    source = open_source(config.data)
    # (The baseline has no inactive factor and only draws unconstrained batches.)
    curator = make_curator(config, source, inactive)
    pairs, size = config.batch.pairs_per_step, config.batch.set_size
    baseline = config.batch.augmentation_baseline
    keys = ("set_a",) if baseline else ("set_a", "set_b")

    def build(step: np.int64) -> tuple[np.ndarray, ...]:
        return tuple(source.images(ids) for ids in step_item_ids(curator, config, seed, int(step)))

    def to_batch(step: tf.Tensor) -> dict[str, tf.Tensor]:
        images = tf.numpy_function(build, [step], [tf.uint8] * len(keys), stateful=False)
        batch = {key: tf.ensure_shape(value, (pairs, size) + IMAGE_SHAPE) for key, value in zip(keys, images)}
        step_seed = tf.stack([tf.constant(int(seed) % (1 << 63), tf.int64), step])
        if baseline:
            views = tf.random.experimental.stateless_split(step_seed, num=2)
            first = augment_ops.random_hue(batch["set_a"], HUE_BASELINE_MAX_DELTA, views[0])
            second = augment_ops.random_hue(batch["set_a"], HUE_BASELINE_MAX_DELTA, views[1])
            return {"set_a": first, "set_a_view2": second}
        if augmentations:
            return augment.double_augment(
                batch, augmentations, step_seed, double=config.batch.double_augmentation
            )
        return batch

    dataset = tf.data.Dataset.counter(start=0, dtype=tf.int64)
    dataset = dataset.map(to_batch, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
    logger.info(
        "Shapes3D sets from the %s; inactive factors: %s.",
        source.description,
        ", ".join(FACTOR_NAMES[i] for i in inactive) or "none (hue baseline)",
    )
    return dataset.prefetch(tf.data.AUTOTUNE)


def labelled_sample(config: ExperimentConfig, num_images: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Distinct images drawn uniformly from the whole data set, with their factor indices.

    For the evaluation helpers (mutual information, probes).
    Returns:
      images: uint8 [num_images, 64, 64, 3];
      factor_indices: int64 [num_images, 6], columns in FACTOR_NAMES order, values in
        [0, FACTOR_SIZES[column]).
    """
    if num_images < 1:
        raise ValueError(f"num_images must be positive, got {num_images}.")
    source = open_source(config.data)
    items = source.items
    total = GRID.num_points if items is None else items.shape[0]
    if num_images > total:
        raise ValueError(
            f"Asked for {num_images} distinct Shapes3D images; the {source.description} holds {total}."
        )
    ids = GroupIndex.whole(total).draw_from_all(np.random.default_rng(int(seed) % (1 << 63)), 1, num_images)[
        0
    ]
    factors = GRID.unravel(ids) if items is None else items[ids]
    return source.images(ids), factors


@functools.lru_cache(maxsize=1)
def _open_cached(data_source: str, data_path: str, data_in_memory: bool) -> Source:
    return open_source(Shapes3DConfig(source=data_source, path=data_path, data_in_memory=data_in_memory))


def images_of(config: ExperimentConfig, factor_indices: np.ndarray) -> np.ndarray:
    """uint8 images [n, 64, 64, 3] of the given factor indices [n, 6] (FACTOR_NAMES order): the
    grid point rendered or read, or for a partial tfds copy its first record of those values
    (ValueError when it has none). The backend stays open between calls (the disentanglement
    scores ask for images many times)."""
    factors = np.asarray(factor_indices, dtype=np.int64)
    if factors.ndim != 2 or factors.shape[1] != len(FACTOR_SIZES):
        raise ValueError(f"Factor indices must have shape [n, {len(FACTOR_SIZES)}], got {factors.shape}.")
    if np.any(factors < 0) or np.any(factors >= np.asarray(FACTOR_SIZES)):
        raise ValueError(f"Factor indices lie outside the factor sizes {FACTOR_SIZES}.")
    source = _open_cached(config.data.source, config.data.path, config.data.data_in_memory)
    flat = GRID.ravel(factors)
    if source.items is None:
        return source.images(flat)
    record = np.full(GRID.num_points, -1, np.int64)
    record[GRID.ravel(source.items)[::-1]] = np.arange(source.items.shape[0])[::-1]  # the first record wins
    ids = record[flat]
    if np.any(ids < 0):
        missing = factors[np.flatnonzero(ids < 0)[0]].tolist()
        raise ValueError(f"The {source.description} holds no image of the factor values {missing}.")
    return source.images(ids)


def check_config(config: ExperimentConfig) -> None:
    """The Shapes3D checks that read no data (flags, factor names, augmentations), of the sets
    or of the pairs the method trains on."""
    if config.method.batch_format == "pairs":
        shapes3d_pairs.check_config(config)
    else:
        _check_config(config)


FAMILY = DataFamily(
    name="shapes3d",
    config=Shapes3DConfig,
    evaluation_task="factors",
    image_shape=image_shape,
    streams={"sets": make_dataset, "pairs": make_pairs_dataset},
    check_config=check_config,
    sources=SOURCES,
    known_factors=KnownFactors(
        FACTOR_NAMES,
        FACTOR_SIZES,
        labelled_sample,
        inactive_factors,
        images_of,
        augmented_by_baseline=HUE_FACTORS,
    ),
)
