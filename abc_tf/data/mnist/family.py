"""MNIST digit-style isolation data (docs/PAPERS.md section 3, MNIST row; paper section 4.2, S8.2).

Sets are stacks of ``set_size`` (64) images of one digit. Each step pairs stacks of two different
random digits, unless ``allow_same_digit``. So the digit is the inactive factor and style, e.g.
slant and thickness, the active one. ``holdout_digit`` (9 by default, or ``none``) never enters a
training batch.
``class_split`` 1..50 picks one of Elastic-InfoGAN's imbalanced splits; without one the digits are
drawn uniformly, the paper's setting.
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from abc_tf.config import ExperimentConfig
from abc_tf.data.mnist import digit_augment
from abc_tf.data.mnist import digit_style
from abc_tf.data.mnist import imbalance as mnist_imbalance
from abc_tf.data.mnist import sources
from abc_tf.data.family import ClassLabelledImages, DataFamily, KnownFactors, quantile_bins
from abc_tf.data.groups import CHUNK_STEPS, GroupIndex, chunk_rng, draw_stream
from abc_tf.data.mnist import MnistConfig
from abc_tf.data.mnist.formats import IMAGE_SHAPE, NUM_CLASSES

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

    Per pair, two digits, different unless ``allow_same_digit``, uniform or with ``proportional`` in
    proportion to each digit's images (a rare digit makes few stacks, as stacks cut from imbalanced data
    would), each a stack of ``set_size`` distinct images. ``with_digits`` adds ``digit_a``, ``digit_b``.
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
    data = sources.load_mnist(config)
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

    Drawn uniformly, distinct within a step when N allows.
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
    """Images [N, 28, 28] uint8 and digits [N] of the training split but ``holdout_digit``."""
    digits = training_digits(config)
    data = sources.load_mnist(config)
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
    sources.resolve_source(config)


# Known factors of the test images: the digit (fixed within a stack, the inactive factor) and
# two style measures (abc_tf.data.mnist.digit_style) in quantile bins.
FACTOR_NAMES = ("digit", "slant", "thickness")
STYLE_BINS = 4


def labelled_sample(config: ExperimentConfig, num_images: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Distinct test images [n, 28, 28, 1] uint8 and their factors [n, 3], in FACTOR_NAMES order.

    The factors are the digit 0-9, and slant and stroke thickness in STYLE_BINS quantile bins of
    the sample.
    """
    digits = sources.load_mnist(config)
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
    digits = sources.load_mnist(config)
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
    """The class split of ``config`` (:func:`abc_tf.data.mnist.imbalance.describe`), or None without one."""
    if config.data.class_split == mnist_imbalance.NO_SPLIT:
        return None
    _, labels = sources.class_split_pool(config)
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
    sources=sources.SOURCES,
)
