"""Pose isolation from synthetic to real, family ``pose`` (docs/PAPERS.md sections 1, 3, 5, 6; S5, S8.3).

A batch holds ``pairs_per_step`` pairs of sets. Set A: ``set_size`` renders of ONE instance; only pose varies.
Set B: ``set_size`` unconstrained renders of all training instances; a fraction are unlabelled real images.
The fraction rises from none in stairs to ``real_fraction`` (:func:`abc_tf.schedules.real_fraction`).
Every image is augmented twice by :func:`abc_tf.data.augment.pose_augment`; the second views are ``*_view2``.

Keys: ``set_a``, ``set_b``, ``*_view2``: uint8 [P, N or M, S, S, 3]. ``real_b`` bool [P, M]: B's real images.
``labels_a`` float32 [P, N, 3]: set A's azimuth, elevation, tilt, radians (:mod:`abc_tf.geometry`).
``index_a`` int64 [P, N]: each A image's row in the training renders; ``group_a`` int64 [P]: its instance.
Batch t depends only on (seed, step), so a resumed run continues the titration where it stopped.
"""

from __future__ import annotations

import dataclasses
from typing import Callable

import numpy as np
import tensorflow as tf

from abc_tf import schedules
from abc_tf.config import ExperimentConfig
from abc_tf.data import augment
from abc_tf.data.pose import procedural as pose_procedural
from abc_tf.data.family import DataFamily
from abc_tf.data.groups import CHUNK_STEPS, GroupIndex, chunk_rng, draw_stream, sample_distinct, step_draws
from abc_tf.data.folders.image_files import load_image_folder
from abc_tf.data.pose.config_checks import SOURCES, check_config, held_out_instances, max_elevation, source
from abc_tf.data.pose.keypointnet import keypointnet_files, read_keypointnet
from abc_tf.data.pose.labelled_views import kept_training_rows, labelled_images
from abc_tf.data.pose.titration import training_callbacks
from abc_tf.data.pose import PoseConfig


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

    def group_index(self) -> GroupIndex:
        """The renders grouped by instance (ValueError unless sorted by instance)."""
        return GroupIndex.from_groups(self.instances, len(self.instance_names), self.instance_names)


def image_shape(config: ExperimentConfig) -> tuple[int, int, int]:
    """(image_size, image_size, 3)."""
    return (config.data.image_size, config.data.image_size, 3)


# ----------------------------------------------------------------------------- images


def load_backgrounds(config: ExperimentConfig) -> np.ndarray:
    """The images painted behind the renders: ``background_data_path`` or the built-in ones;
    none with ``paint_backgrounds=False``.

    Backgrounds have their own source, apart from set B's real images: the paper paints renders with
    crops of images without the category's objects (supplement S5), so a render never gets a second car
    behind it. By default the built-in clutter scenes without objects.
    """
    if not config.data.paint_backgrounds:
        size = config.data.image_size
        return np.zeros((0, size, size, 3), np.uint8)
    if config.data.background_data_path:
        return load_image_folder(
            config.data.background_data_path, config.data.image_size, 3, "--data.background_data_path"
        )
    return pose_procedural.backgrounds(config.data.image_size)


def load_banks(config: ExperimentConfig) -> PoseBanks:
    """The training renders, unlabelled real images and backgrounds of ``config``.

    ``--data.source``: ``procedural`` renders car-like or chair-like instances; ``keypointnet`` reads
    the tfrecords of ``data_path``. Views above the maximum elevation are dropped. The training renders
    stay in RAM as uint8 RGBA, N x S x S x 4 bytes.
    """
    check_config(config)
    size, elev = config.data.image_size, max_elevation(config)
    if source(config) == "procedural":
        synthetic, euler, instances, names, real = pose_procedural.training_images(
            config.data.pose_category, size, elev
        )
    else:
        synthetic, euler, instances, names = read_keypointnet(
            keypointnet_files(config.data.path, "train"), size, elev
        )
        real = np.zeros((0, size, size, 3), np.uint8)
        if config.data.real_data_path:
            real = load_image_folder(config.data.real_data_path, size, 3, "--data.real_data_path")
    held_out = held_out_instances(config)
    if held_out:
        kept = kept_training_rows(instances, len(names), held_out)
        synthetic, euler, instances, names = (
            synthetic[kept],
            euler[kept],
            instances[kept],
            names[: len(names) - held_out],
        )
    return PoseBanks(synthetic, euler, instances, names, real, load_backgrounds(config))


# ----------------------------------------------------------------------------- batches


def index_draws(banks: PoseBanks, config: ExperimentConfig, seed: int) -> Callable[[int], list[np.ndarray]]:
    """Returns ``draw_chunk(chunk)``: the rows the steps of a chunk draw
    (:func:`abc_tf.data.groups.draw_stream`), arrays in the order of ``INDEX_KEYS``, each with a
    leading axis of ``CHUNK_STEPS`` steps: ``index_a`` int64 [P, N] (one instance per row,
    distinct views unless ``sample_with_replacement``), ``index_b`` int64 [P, M] distinct
    synthetic rows of all instances, ``index_real`` int64 [P, M] real rows, ``real_b`` bool
    [P, M] (the first ``floor(f M + u)`` slots of each set B are real), ``fraction`` float32
    (the schedule's value at the step). Raises ValueError naming the flag when no instance can
    give a set."""
    pairs, set_size = config.batch.pairs_per_step, config.batch.set_size
    replace = config.data.sample_with_replacement
    index = banks.group_index()
    eligible = index.eligible(set_size, replace=replace, what="views", replace_flag="sample_with_replacement")
    if index.num_items < set_size:
        raise ValueError(
            f"--batch.set_size={set_size} exceeds the {index.num_items} renders (unconstrained set B)."
        )
    num_real = len(banks.real)
    if config.data.real_fraction > 0 and num_real == 0:
        raise ValueError("--data.real_fraction > 0 but there are no real images (--data.real_data_path).")
    shape = (CHUNK_STEPS, pairs, set_size)

    def draw_chunk(chunk: int) -> list[np.ndarray]:
        rng = chunk_rng(seed, chunk)
        rows = CHUNK_STEPS * pairs
        index_a = index.draw_within(rng, index.draw_groups(rng, rows, among=eligible), set_size, replace)
        index_b = index.draw_from_all(rng, rows, set_size)
        steps = range(chunk * CHUNK_STEPS, (chunk + 1) * CHUNK_STEPS)
        fraction = np.array(
            [
                schedules.real_fraction(
                    step, config.data.real_fraction, config.data.titration_interval, config.trainer.steps
                )
                for step in steps
            ],
            np.float32,
        )
        real_count = np.floor(fraction[:, np.newaxis] * set_size + rng.random((CHUNK_STEPS, pairs)))
        real_b = np.arange(set_size) < real_count[..., np.newaxis]
        index_real = sample_distinct(rng, np.full(rows, max(num_real, 1)), set_size, replace=True)
        return [index_a.reshape(shape), index_b.reshape(shape), index_real.reshape(shape), real_b, fraction]

    return draw_chunk


def step_indices(
    banks: PoseBanks, config: ExperimentConfig, seed: int
) -> Callable[[int], dict[str, np.ndarray]]:
    """``f(step) -> {key of INDEX_KEYS: array}``: the rows step ``step`` of :func:`dataset_from_banks`
    draws (tests and diagnostics; a pure function of (seed, step))."""
    draw_chunk = index_draws(banks, config, seed)
    return lambda step: dict(zip(INDEX_KEYS, step_draws(draw_chunk, step)))


INDEX_KEYS = ("index_a", "index_b", "index_real", "real_b", "fraction")


def _to_uint8(images: tf.Tensor) -> tf.Tensor:
    return tf.cast(tf.clip_by_value(tf.round(images * 255.0), 0.0, 255.0), tf.uint8)


def make_dataset(config: ExperimentConfig, seed: int, start_step: int = 0) -> tf.data.Dataset:
    """Endless pose batches (see the module docstring); the first batch is step ``start_step``.

    Per pair, ``floor(f M + u)`` images of set B are real, u ~ U[0, 1), so the expected fraction is f
    exactly, even when f M < 1.
    """
    banks = load_banks(config)
    return dataset_from_banks(banks, config, seed, start_step)


def dataset_from_banks(
    banks: PoseBanks, config: ExperimentConfig, seed: int, start_step: int = 0
) -> tf.data.Dataset:
    """The batches of :func:`make_dataset` drawn from given banks (tests pass small ones)."""
    if start_step < 0:
        raise ValueError(f"start_step must be >= 0, got {start_step}.")
    draw_chunk = index_draws(banks, config, seed)
    pairs, set_size = config.batch.pairs_per_step, config.batch.set_size
    draws = draw_stream(
        draw_chunk, [tf.int64] * 3 + [tf.bool, tf.float32], [(pairs, set_size)] * 4 + [()], start_step
    )

    # Variables, not constants: a captured constant is serialised into the dataset graph (2 GB limit).
    synthetic = tf.Variable(banks.synthetic, trainable=False, name="pose_renders")
    euler = tf.constant(banks.euler, tf.float32)
    instances = tf.constant(banks.instances, tf.int64)
    has_real = len(banks.real) > 0
    real = tf.Variable(
        banks.real if has_real else np.zeros((1,) + banks.synthetic.shape[1:3] + (3,), np.uint8),
        trainable=False,
        name="pose_real_images",
    )
    # Backgrounds come from their own pool, never from the real images of set B (load_backgrounds).
    backgrounds = None
    if len(banks.backgrounds):
        backgrounds = tf.Variable(banks.backgrounds, trainable=False, name="pose_backgrounds")
    crop, colour = float(config.data.crop_amplitude), float(config.data.augmentation_amplitude)
    views = 2 if config.batch.double_augmentation else 1
    aug_seed = tf.constant([seed, 0xA06], tf.int64)

    # Plain graph code (no Python control flow on tensors): skipping AutoGraph's conversion
    # of the augmentation functions saves seconds of tracing.
    @tf.autograph.experimental.do_not_convert
    def make_batch(step: tf.Tensor, rows: tuple[tf.Tensor, ...]) -> dict[str, tf.Tensor]:
        chosen = dict(zip(INDEX_KEYS, rows))
        rgba_a = tf.gather(synthetic, chosen["index_a"])
        rgba_b = tf.gather(synthetic, chosen["index_b"])
        photos = tf.gather(real, chosen["index_real"])
        photos = tf.concat(
            [photos, tf.fill(tf.concat([tf.shape(photos)[:-1], [1]], 0), tf.constant(255, tf.uint8))], -1
        )
        real_b = chosen["real_b"]
        rgba_b = tf.where(real_b[..., tf.newaxis, tf.newaxis, tf.newaxis], photos, rgba_b)
        seeds = tf.random.experimental.stateless_split(
            tf.random.experimental.stateless_fold_in(aug_seed, step), num=4
        )
        # index_a / group_a: each image's row in the banks and each set's instance (training_bank).
        batch = {
            "labels_a": tf.gather(euler, chosen["index_a"]),
            "real_b": real_b,
            "index_a": chosen["index_a"],
            "group_a": tf.gather(instances, chosen["index_a"][:, 0]),
        }
        for key, rgba, is_real, offset in (
            ("set_a", rgba_a, tf.zeros_like(real_b), 0),
            ("set_b", rgba_b, real_b, 2),
        ):
            images = tf.cast(rgba, tf.float32) / 255.0
            for view in range(views):
                out = augment.pose_augment(images, is_real, backgrounds, crop, colour, seeds[offset + view])
                batch[key if view == 0 else key + "_view2"] = _to_uint8(out)
        return batch

    return draws.map(make_batch, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True).prefetch(2)


# ----------------------------------------------------------------------------- training hooks
def training_bank(config: ExperimentConfig) -> tuple[int, int]:
    """(renders, instances) of the training banks, which ``index_a`` and ``group_a`` index."""
    banks = load_banks(config)
    return len(banks.synthetic), len(banks.instance_names)


FAMILY = DataFamily(
    name="pose",
    config=PoseConfig,
    set_shares="the object instance",
    evaluation_task="pose",
    # augmentations: pose refuses it with its own message (check_config).
    image_shape=image_shape,
    streams={"sets": make_dataset},
    check_config=check_config,
    training_callbacks=training_callbacks,
    pose_views=labelled_images,
    training_bank=training_bank,
    sources=SOURCES,
)
