"""MNIST digit-style isolation data (docs/PAPERS.md section 3, MNIST row; paper section 4.2, S8.2).

Sets are stacks of ``set_size`` (64) images of one digit. Each step pairs stacks of two different
random digits, unless ``allow_same_digit``. So the digit is the inactive factor and style, e.g.
slant and thickness, the active one. ``holdout_digit`` (9 by default, or ``none``) never enters a
training batch.
Sources: ``idx``, ``npz``, ``tfds`` and the built-in ``procedural`` digits
(:func:`resolve_source`).

"sets" batches: ``{"set_a", "set_b"}``, uint8 [P, S, 28, 28, 1], from :func:`make_stack_dataset`.
"images" batches: ``{"images": [batch_size, 28, 28, 1] uint8}``, uniform training images.
``augmentation_baseline``: two augmented views, from :mod:`abc_tf.data.mnist.digit_augment`.
``class_split`` 1..50 picks one of Elastic-InfoGAN's imbalanced splits (:func:`load_mnist`).
Without one the digits are drawn uniformly, the paper's setting.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import os

import numpy as np
import tensorflow as tf

from abc_tf.config import ExperimentConfig
from abc_tf.data.mnist import digit_augment
from abc_tf.data.mnist import digit_style
from abc_tf.data.mnist import imbalance as mnist_imbalance
from abc_tf.data.family import ClassLabelledImages, DataFamily, DataSources, KnownFactors, quantile_bins
from abc_tf.data.groups import CHUNK_STEPS, GroupIndex, chunk_rng, draw_stream
from abc_tf.data.mnist import MnistConfig
from abc_tf.data.mnist.formats import (
    IDX_FILES,
    IMAGE_SHAPE,
    NUM_CLASSES,
    MnistData,
    check_npz_start,
    find_idx_files,
    load_idx_dir,
    load_npz,
    load_procedural,
    load_tfds,
    tfds_prepared,
)

_log = logging.getLogger(__name__)


# ----------------------------------------------------------------------------- source choice


def _detect(path: str) -> str | None:
    """The source that reads ``path``: an ``.npz`` file, or a folder of the IDX files or a prepared
    tfds ``mnist``.

    ValueError naming the IDX files a folder lacks.
    """
    if os.path.isfile(path):
        check_npz_start(path)
        return "npz"
    found = find_idx_files(path)
    if all(found.values()):
        return "idx"
    if tfds_prepared(path):
        return "tfds"
    missing = "; ".join(f"{IDX_FILES[key][0]}[.gz]" for key, value in found.items() if value is None)
    raise ValueError(
        f"--data.path={path} is a folder without the MNIST IDX files (missing: {missing}) and without "
        "a prepared tfds 'mnist'."
    )


SOURCES = DataSources(
    reading={
        "idx": "a folder with the four MNIST IDX files (plain or .gz)",
        "npz": "an .npz file with x_train, y_train, x_test and y_test",
        "tfds": (
            "a tfds data folder (downloaded there on first use when online; default ~/tensorflow_datasets)"
        ),
    },
    built_in=("procedural",),
    detect=_detect,
    path_optional=("tfds",),
    default=lambda: "tfds" if tfds_prepared(None) else "procedural",
)


def resolve_source(config: ExperimentConfig) -> tuple[str, str]:
    """The source and path that ``config`` selects, ``auto`` resolved (:data:`SOURCES`). Raises
    ValueError.

    - ``idx``: a directory with the four MNIST IDX files, plain or ``.gz``.
    - ``npz``: one ``.npz`` with ``x_train``, ``y_train``, ``x_test``, ``y_test``.
    - ``tfds``: the tfds ``mnist`` data set. The path is the tfds data_dir,
      ``~/tensorflow_datasets`` by default. It is downloaded and prepared on first use when
      online.
    - ``procedural``: built-in handwritten-digit-like renders (:mod:`abc_tf.data.mnist.digits`),
      60,000 train and 10,000 test.
    - ``auto``: ``data_path`` if given, detected as an IDX folder, a tfds folder or an ``.npz``.
      Else tfds ``mnist`` if prepared, never downloaded. Else ``procedural``.
    """
    return SOURCES.resolve("mnist", config.data.source, config.data.path)


@functools.lru_cache(maxsize=4)
def _load_cached(source: str, path: str) -> MnistData:
    if source == "idx":
        data = load_idx_dir(path)
    elif source == "npz":
        data = load_npz(path)
    elif source == "tfds":
        data = load_tfds(path or None, download=True)
    else:
        data = load_procedural()
    for array in (data.x_train, data.y_train, data.x_test, data.y_test, *(data.test_style or {}).values()):
        array.flags.writeable = False  # shared by every caller of the cache
    return data


def class_split_pool(config: ExperimentConfig) -> tuple[np.ndarray, np.ndarray]:
    """Images [N, 28, 28] uint8 and digits [N] that ``config``'s class split draws from.

    See ``class_split_pool`` and :func:`abc_tf.data.mnist.imbalance.pool`.
    """
    source, path = resolve_source(config)
    data = _load_cached(source, os.path.abspath(path) if path else "")
    return mnist_imbalance.pool(
        data.x_train, data.y_train, data.x_test, data.y_test, config.data.class_split_pool
    )


def load_mnist(config: ExperimentConfig) -> MnistData:
    """The MNIST data ``config`` points at, cached per source and path.

    Under ``config.data.class_split``, the training images are the split's, drawn class by class
    from the pool before anything else. The pool is all 70,000 images as the authors', or the
    training images. So split 1 also trains on 6,022 of the 10,000 test images. The test split
    stays whole.
    """
    source, path = resolve_source(config)
    data = _load_cached(source, os.path.abspath(path) if path else "")
    if config.data.class_split != mnist_imbalance.NO_SPLIT:
        images, labels = class_split_pool(config)
        kept = mnist_imbalance.subsample(labels, config.data.class_split)
        data = dataclasses.replace(data, x_train=images[kept], y_train=labels[kept])
    if source == "procedural" and config.data.source == "auto":
        _log.warning(
            "No MNIST found (no --data.path, no prepared tfds 'mnist'): using the built-in procedural "
            "digits. Point --data.path at a directory of MNIST IDX files or an .npz to use real MNIST."
        )
    _log.info("MNIST data: %s (%d train, %d test images)", data.source, len(data.y_train), len(data.y_test))
    return data


# ----------------------------------------------------------------------------- stacks


def parse_holdout_digit(value: str | int | None) -> int | None:
    """``holdout_digit`` as an int 0-9, or None for 'none' or ''. Raises ValueError otherwise."""
    if value is None:
        return None
    text = str(value).strip().lower()
    if text in ("", "none"):
        return None
    if text.isdigit() and 0 <= int(text) < NUM_CLASSES:
        return int(text)
    raise ValueError(f"holdout_digit must be a digit 0-9 or 'none', got {value!r}.")


def training_digits(config: ExperimentConfig) -> list[int]:
    """The digits that may appear in training batches: all but the held-out one."""
    holdout = parse_holdout_digit(config.data.holdout_digit)
    return [digit for digit in range(NUM_CLASSES) if digit != holdout]


def make_stack_dataset(
    images: np.ndarray,
    labels: np.ndarray,
    digits: list[int],
    set_size: int,
    pairs_per_step: int,
    allow_same_digit: bool,
    seed: int,
    with_digits: bool = False,
    proportional: bool = False,
) -> tf.data.Dataset:
    """Endless batches of digit stacks from ``images`` [N, 28, 28] uint8 with ``labels`` [N].

    For each of the P pairs, each step draws two digits of ``digits``. They differ unless
    ``allow_same_digit``. They are uniform, or with ``proportional`` in proportion to each
    digit's images; set B's is drawn among the other digits. So a rare digit makes few stacks, as
    stacks cut from imbalanced data would.
    Each digit gets a stack of ``set_size`` distinct images, uniformly without replacement.
    Batch: ``set_a``, ``set_b`` [P, S, 28, 28, 1] uint8. ``with_digits`` adds ``digit_a``,
    ``digit_b`` [P] int32 for tests and diagnostics.
    A pure function of seed and step (:func:`abc_tf.data.groups.draw_stream`).
    """
    if len(digits) == 0:
        raise ValueError("No digits left for training (holdout_digit removes the only one).")
    if not allow_same_digit and len(digits) < 2:
        raise ValueError(
            f"Two different digits per step need at least two training digits, got {list(digits)}; "
            "set --data.allow_same_digit or change --holdout_digit."
        )
    # One group per training digit; every digit must give a stack (a skipped digit would
    # change the experiment), so all of them are needed.
    index, _ = GroupIndex.from_keys(labels, groups=digits, names=[f"digit {d}" for d in digits])
    index.eligible(set_size, needed=len(digits), what="training images")
    pairs = int(pairs_per_step)
    weights = index.counts if proportional else None

    def draw_chunk(chunk: int) -> tuple[np.ndarray, ...]:
        rng = chunk_rng(seed, chunk)
        rows = CHUNK_STEPS * pairs
        first = index.draw_groups(rng, rows, weights=weights)
        second = index.draw_groups(rng, rows, exclude=None if allow_same_digit else first, weights=weights)
        stacks = [
            index.draw_within(rng, digits, set_size).reshape(CHUNK_STEPS, pairs, set_size)
            for digits in (first, second)
        ]
        return (*stacks, first.reshape(CHUNK_STEPS, pairs), second.reshape(CHUNK_STEPS, pairs))

    pool = tf.constant(np.asarray(images)[..., None])
    digit_values = tf.constant(np.asarray(digits), tf.int32)

    def batch_for_step(step: tf.Tensor, draws: tuple[tf.Tensor, ...]) -> dict[str, tf.Tensor]:
        rows_a, rows_b, first, second = draws
        batch = {"set_a": tf.gather(pool, rows_a), "set_b": tf.gather(pool, rows_b)}
        if with_digits:
            batch["digit_a"], batch["digit_b"] = (
                tf.gather(digit_values, first),
                tf.gather(digit_values, second),
            )
        return batch

    shapes = [(pairs, set_size)] * 2 + [(pairs,)] * 2
    dataset = draw_stream(draw_chunk, [tf.int64] * 4, shapes).map(
        batch_for_step, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True
    )
    return dataset.prefetch(tf.data.AUTOTUNE)


def make_dataset(config: ExperimentConfig, seed: int, start_step: int = 0) -> tf.data.Dataset:
    """Training batches of the MNIST style experiment, after checking the settings.

    ``start_step`` is unused: the trainer derives ``seed`` from it.
    """
    del start_step
    digits = training_digits(config)  # validates holdout_digit before loading anything
    if config.batch.augmentation_baseline:  # unconstrained sets, two augmented views (no digit used)
        images, _ = training_images(config)
        return digit_augment.make_view_pair_dataset(
            images, config.batch.set_size, config.batch.pairs_per_step, seed
        )
    data = load_mnist(config)
    return make_stack_dataset(
        data.x_train,
        data.y_train,
        digits,
        config.batch.set_size,
        config.batch.pairs_per_step,
        config.data.allow_same_digit,
        seed,
        proportional=config.data.class_split != mnist_imbalance.NO_SPLIT,
    )


def make_image_dataset(
    images: np.ndarray, batch_size: int, seed: int, start_step: int = 0
) -> tf.data.Dataset:
    """Endless batches ``{"images": [batch_size, 28, 28, 1] uint8}`` of ``images`` [N, 28, 28].

    Drawn uniformly, with replacement across steps and distinct within a step when N allows. A
    pure function of seed and step, like the stacks.
    """
    if len(images) == 0:
        raise ValueError("No training images left for the 'images' stream (check --data.holdout_digit).")
    batch = int(batch_size)

    def draw_chunk(chunk: int) -> tuple[np.ndarray]:
        rng = chunk_rng(seed, chunk)
        if len(images) >= batch:
            rows = np.stack([rng.choice(len(images), batch, replace=False) for _ in range(CHUNK_STEPS)])
        else:
            rows = rng.integers(0, len(images), size=(CHUNK_STEPS, batch))
        return (rows,)

    pool = tf.constant(np.asarray(images)[..., None])
    dataset = draw_stream(draw_chunk, [tf.int64], [(batch,)], start_step).map(
        lambda step, draws: {"images": tf.gather(pool, draws[0])},
        num_parallel_calls=tf.data.AUTOTUNE,
        deterministic=True,
    )
    return dataset.prefetch(tf.data.AUTOTUNE)


def training_images(config: ExperimentConfig) -> tuple[np.ndarray, np.ndarray]:
    """Images [N, 28, 28] uint8 and digits [N] of the training split that may enter training.

    That is every digit but ``holdout_digit``.
    """
    digits = training_digits(config)
    data = load_mnist(config)
    keep = np.isin(data.y_train, digits)
    return data.x_train[keep], data.y_train[keep]


def make_images_dataset(config: ExperimentConfig, seed: int, start_step: int = 0) -> tf.data.Dataset:
    """The "images" batch format: single training images, no label."""
    del start_step  # the trainer derives ``seed`` from it, as for the stacks
    images, _ = training_images(config)
    return make_image_dataset(images, config.batch.batch_size, seed)


def image_shape(config: ExperimentConfig) -> tuple[int, int, int]:
    """MNIST images are 28 x 28 grayscale."""
    del config
    return IMAGE_SHAPE


def check_config(config: ExperimentConfig) -> None:
    """The MNIST checks that read no image: the held-out digit, the class split, the source and its
    files.
    """
    if getattr(config.batch, "double_augmentation", False):
        raise ValueError(
            "--batch.double_augmentation: MNIST's stacks have no augmented second view (its two-view "
            "sets are those of --batch.augmentation_baseline)."
        )
    training_digits(config)
    mnist_imbalance.check_split(config.data.class_split)
    mnist_imbalance.check_pool(config.data.class_split_pool)
    resolve_source(config)


# Known factors of the test images: the digit (fixed within a stack, the inactive factor) and
# two style measures (abc_tf.data.mnist.digit_style) in quantile bins.
FACTOR_NAMES = ("digit", "slant", "thickness")
STYLE_BINS = 4


def labelled_sample(config: ExperimentConfig, num_images: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Distinct test images [n, 28, 28, 1] uint8 and their factors [n, 3], in FACTOR_NAMES order.

    The factors are the digit 0-9, and slant and stroke thickness in STYLE_BINS quantile bins of
    the sample.
    """
    digits = load_mnist(config)
    if not 0 < num_images <= len(digits.y_test):
        raise ValueError(
            f"num_images must lie in 1..{len(digits.y_test)} (the MNIST test images), got {num_images}."
        )
    rows = np.sort(np.random.default_rng(int(seed) % (1 << 63)).permutation(len(digits.y_test))[:num_images])
    images = digits.x_test[rows]
    style = digit_style.style_measures(images)
    factors = np.stack(
        [
            digits.y_test[rows].astype(np.int32),
            quantile_bins(style["slant"], STYLE_BINS),
            quantile_bins(style["thickness"], STYLE_BINS),
        ],
        axis=1,
    )
    return images[..., np.newaxis], factors.astype(np.int64)


def class_labelled_images(config: ExperimentConfig) -> ClassLabelledImages:
    """The training images and the whole test split with their digits, and the held-out digit.

    Under ``class_split`` the training images are the split's.
    """
    digits = load_mnist(config)
    return ClassLabelledImages(
        train_images=np.asarray(digits.x_train)[..., np.newaxis],
        train_labels=np.asarray(digits.y_train, np.int64),
        test_images=np.asarray(digits.x_test)[..., np.newaxis],
        test_labels=np.asarray(digits.y_test, np.int64),
        held_out=parse_holdout_digit(config.data.holdout_digit),
    )


def class_proportions(config: ExperimentConfig) -> np.ndarray:
    """float64 [10]: each digit's share of the training images batches draw from.

    The held-out digit's is 0. Under ``class_split`` they are the split's proportions.
    """
    _, labels = training_images(config)
    counts = np.bincount(labels, minlength=NUM_CLASSES).astype(np.float64)
    return counts / counts.sum()


def class_split_description(config: ExperimentConfig) -> dict | None:
    """The class split of ``config``, or None without one.

    See :func:`abc_tf.data.mnist.imbalance.describe`: its per-digit counts drawn from the pool.
    """
    if config.data.class_split == mnist_imbalance.NO_SPLIT:
        return None
    _, labels = class_split_pool(config)
    return mnist_imbalance.describe(config.data.class_split, labels, config.data.class_split_pool)


FAMILY = DataFamily(
    name="mnist",
    config=MnistConfig,
    set_shares="the digit",
    evaluation_task="digit_style",
    image_shape=image_shape,
    streams={"sets": make_dataset, "images": make_images_dataset},
    check_config=check_config,
    known_factors=KnownFactors(
        FACTOR_NAMES, (NUM_CLASSES, STYLE_BINS, STYLE_BINS), labelled_sample, lambda config: (0,)
    ),
    class_labelled_images=class_labelled_images,
    class_proportions=class_proportions,
    class_split_description=class_split_description,
    sources=SOURCES,
)
