"""Class-imbalanced MNIST (abc_tf/data/mnist/imbalance.py and its use in abc_tf/data/mnist/family.py):
the stored counts are the authors' file's (its totals, and the supplement's printed
proportions), a split keeps them from the 70,000-image pool or scales them down in a smaller
one, the test set is untouched."""

from __future__ import annotations

import numpy as np
import pytest

from abc_tf.data import get_family
from abc_tf.data.mnist import sources as mnist_sources
from abc_tf.data.mnist import imbalance as mnist_imbalance
from mnist_helpers import mnist_config

# Read from the authors' splits/50_data_imbalance.npy (github.com/WisconsinAIVision/elastic-infogan,
# commit caaccbbe29526920c79cef6c182a36bc130da5e8) after truncating to integers, as their
# create_mnist.py does: each split's images, and each digit's over the 50 splits.
FILE_SPLIT_TOTALS = [
    42794,
    33102,
    36406,
    37336,
    44223,
    36642,
    38653,
    34449,
    44477,
    38335,
    33705,
    40352,
    35853,
    38183,
    40604,
    45393,
    36635,
    39632,
    35820,
    40168,
    36227,
    34121,
    46552,
    31527,
    32108,
    31515,
    30911,
    33326,
    36083,
    42526,
    48122,
    29640,
    45136,
    36527,
    43711,
    45894,
    38141,
    41028,
    36153,
    44215,
    33479,
    39103,
    33009,
    36246,
    34370,
    30162,
    44398,
    37554,
    38777,
    34238,
]
FILE_DIGIT_TOTALS = [174021, 191193, 188910, 216868, 174928, 201371, 158264, 188253, 209953, 193800]
# MNIST's images of each digit: the 60,000 training images, and all 70,000.
MNIST_TRAIN = np.array([5923, 6742, 5958, 6131, 5842, 5421, 5918, 6265, 5851, 5949])
MNIST_ALL = MNIST_TRAIN + np.array([980, 1135, 1032, 1010, 982, 892, 958, 1028, 974, 1009])


def test_the_stored_counts_are_the_authors_file_s():
    counts = mnist_imbalance.AUTHORS_COUNTS
    assert counts.shape == (50, 10) and counts.dtype == np.int64
    # Split 1 (their --ind 1): docs/PAPERS.md section P3's row, truncated as create_mnist.py does.
    np.testing.assert_array_equal(
        mnist_imbalance.split_counts(1), [6300, 1585, 1407, 6134, 5812, 4882, 2424, 4785, 6125, 3340]
    )
    assert counts[0].sum() == 42_794
    np.testing.assert_array_equal(counts.sum(axis=1), FILE_SPLIT_TOTALS)
    np.testing.assert_array_equal(counts.sum(axis=0), FILE_DIGIT_TOTALS)
    assert np.all(counts.max(axis=1) == 6300) and counts.min() == 684
    assert np.all(counts <= MNIST_ALL)  # every split fits in the 70,000 images as it is


def test_the_supplement_prints_the_same_splits_without_33_to_35():
    """The supplement's table (L274-323) gives the proportions to 3 decimals; its rows are the
    splits in order, splits 33-35 missing. Four of its rows: the first, the last before the gap,
    the first after it, the last."""
    printed = {
        1: (0.147, 0.037, 0.033, 0.143, 0.136, 0.114, 0.057, 0.112, 0.143, 0.078),
        32: (0.096, 0.121, 0.026, 0.046, 0.043, 0.124, 0.165, 0.04, 0.127, 0.213),
        36: (0.117, 0.115, 0.125, 0.128, 0.081, 0.103, 0.073, 0.044, 0.137, 0.077),
        50: (0.071, 0.046, 0.134, 0.119, 0.159, 0.057, 0.039, 0.135, 0.057, 0.184),
    }
    for split, row in printed.items():
        counts = mnist_imbalance.split_counts(split)
        np.testing.assert_allclose(counts / counts.sum(), row, atol=6e-4)  # 3 decimals, whole images


def test_bad_splits_and_pools_are_refused():
    for split in (-2, 0, 51):
        with pytest.raises(ValueError, match="--data.class_split must be -1"):
            mnist_imbalance.check_split(split)
    with pytest.raises(ValueError, match="--data.class_split must be -1"):
        get_family("mnist").check_config(mnist_config(class_split=0))
    with pytest.raises(ValueError, match="--data.class_split_pool must be one of all, train"):
        get_family("mnist").check_config(mnist_config(class_split=1, class_split_pool="test"))


def test_counts_are_the_authors_where_the_pool_allows_else_scaled_down():
    # The 70,000 images hold every split as it is.
    for split in range(1, 51):
        np.testing.assert_array_equal(
            mnist_imbalance.class_counts(mnist_imbalance.split_counts(split), MNIST_ALL),
            mnist_imbalance.split_counts(split),
        )
    # A smaller pool keeps the proportions at the largest size it allows: s = min(60/100, 90/50) = 0.6.
    wanted, available = np.array([100, 50, 50] + [10] * 7), np.array([60, 90, 90] + [10] * 7)
    np.testing.assert_array_equal(mnist_imbalance.class_counts(wanted, available), [60, 30, 30] + [6] * 7)
    # The training images alone (--data.class_split_pool=train): one digit at its limit, the proportions kept.
    for split in (1, 17, 50):
        wanted = mnist_imbalance.split_counts(split)
        counts = mnist_imbalance.class_counts(wanted, MNIST_TRAIN)
        assert np.all(counts <= MNIST_TRAIN) and np.any(counts >= MNIST_TRAIN - 1)
        np.testing.assert_allclose(counts / counts.sum(), wanted / wanted.sum(), atol=2e-4)


def test_the_pool_is_the_training_then_the_test_images():
    x_train, y_train = np.arange(6).reshape(6, 1, 1), np.arange(6) % 3
    x_test, y_test = np.arange(6, 9).reshape(3, 1, 1), np.arange(3)
    images, labels = mnist_imbalance.pool(x_train, y_train, x_test, y_test, "all")
    np.testing.assert_array_equal(images.ravel(), np.arange(9))
    np.testing.assert_array_equal(labels, [0, 1, 2, 0, 1, 2, 0, 1, 2])
    images, labels = mnist_imbalance.pool(x_train, y_train, x_test, y_test, "train")
    np.testing.assert_array_equal(images.ravel(), np.arange(6))


def test_a_split_of_a_70k_pool_keeps_the_authors_counts():
    labels = np.random.default_rng(0).permutation(np.repeat(np.arange(10), 7000))
    kept = mnist_imbalance.subsample(labels, 1)
    np.testing.assert_array_equal(kept, mnist_imbalance.subsample(labels, 1))  # the split decides
    assert np.all(np.diff(kept) > 0)
    np.testing.assert_array_equal(np.bincount(labels[kept], minlength=10), mnist_imbalance.split_counts(1))
    assert len(kept) == 42_794
    described = mnist_imbalance.describe(1, labels, "all")
    assert described["counts"] == described["authors_counts"] == mnist_imbalance.split_counts(1).tolist()
    assert (
        described["pool"] == "all" and described["pool_images"] == 70_000 and "--ind 1" in described["source"]
    )


def coded_index(images: np.ndarray) -> np.ndarray:
    """The index the coded MNIST writes into pixels (0, 1) and (0, 2) (tests/mnist_helpers.py)."""
    return images[:, 0, 1].astype(int) + 256 * images[:, 0, 2].astype(int)


def test_a_split_draws_from_training_and_test_images_and_leaves_the_test_set_alone(tmp_path, small_mnist):
    path = str(tmp_path / "mnist.npz")
    np.savez(path, **small_mnist)
    whole = mnist_sources.load_mnist(mnist_config(path=path))
    split = mnist_sources.load_mnist(mnist_config(path=path, class_split=5))
    np.testing.assert_array_equal(split.x_test, whole.x_test)
    np.testing.assert_array_equal(split.y_test, whole.y_test)
    # The kept images are the pool's (training then test images), each with its own label.
    images, labels = mnist_imbalance.pool(whole.x_train, whole.y_train, whole.x_test, whole.y_test, "all")
    order = mnist_imbalance.subsample(labels, 5)
    np.testing.assert_array_equal(split.x_train, images[order])
    np.testing.assert_array_equal(split.y_train, labels[order])
    assert np.any(coded_index(split.x_train) >= 1000)  # some test images (coded from 1000 on)
    # The pool of 16 images per digit scales split 5 down: s = 16 / 6300.
    np.testing.assert_array_equal(
        np.bincount(split.y_train, minlength=10),
        mnist_imbalance.class_counts(mnist_imbalance.split_counts(5), np.full(10, 16)),
    )
    # --data.class_split_pool=train: training images only.
    train_only = mnist_sources.load_mnist(mnist_config(path=path, class_split=5, class_split_pool="train"))
    assert np.all(coded_index(train_only.x_train) < 1000)
    np.testing.assert_array_equal(
        train_only.x_train, whole.x_train[mnist_imbalance.subsample(whole.y_train, 5)]
    )


def test_the_images_stream_draws_from_the_split(tmp_path, small_mnist):
    path = str(tmp_path / "mnist.npz")
    np.savez(path, **small_mnist)
    config = mnist_config(method="vae", path=path, class_split=23, holdout_digit="none", batch_size=8)
    kept = set(coded_index(mnist_sources.load_mnist(config).x_train).tolist())
    stream = get_family("mnist").stream("images")(config, 0, 0)
    seen = set()
    for batch in stream.take(30):
        seen |= set(coded_index(batch["images"].numpy()[..., 0]).tolist())
    assert seen <= kept and len(seen) > len(kept) // 2


def test_stacks_of_a_split_come_in_proportion_to_its_digits(tmp_path):
    """Under --data.class_split a digit makes stacks in proportion to its training images (set B's
    digit among the others); without a split the stack digits are uniform, as in the paper."""
    from mnist_helpers import coded_split

    x_train, y_train = coded_split(300, 0)
    x_test, y_test = coded_split(4, 5000)
    path = str(tmp_path / "mnist.npz")
    np.savez(path, x_train=x_train, y_train=y_train, x_test=x_test, y_test=y_test)
    split = 26  # digits 0 and 1 are rare (4%, 2%), 2 and 3 common (20%, 19%)
    config = mnist_config(path=path, class_split=split, holdout_digit="none", set_size=4, pairs_per_step=4)
    counts = np.bincount(mnist_sources.load_mnist(config).y_train, minlength=10)

    def stack_digits(config):
        digits = []
        for batch in get_family("mnist").stream("sets")(config, 3).take(150):
            digits += [(batch[key].numpy()[:, 0, 0, 0, 0] - 5) // 20 for key in ("set_a", "set_b")]
        return np.bincount(np.concatenate(digits).astype(int), minlength=10)

    drawn = stack_digits(config)
    first_moment = drawn / drawn.sum()
    # Set A follows the counts exactly; set B, drawn among the other digits, flattens them a
    # little; together they stay near the split's proportions and far from uniform.
    np.testing.assert_allclose(first_moment, counts / counts.sum(), atol=0.03)
    assert first_moment[2] > 4 * first_moment[1]
    uniform = stack_digits(config.replace(class_split=mnist_imbalance.NO_SPLIT))
    np.testing.assert_allclose(uniform / uniform.sum(), 0.1, atol=0.03)
