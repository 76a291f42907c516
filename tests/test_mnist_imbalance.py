"""Class-imbalanced MNIST (abc_tf/data/mnist_imbalance.py and its use in abc_tf/data/mnist.py):
the splits reproduce the supplement's, subsampling follows them, the test set is untouched."""

from __future__ import annotations

import numpy as np
import pytest

from abc_tf.data import get_family, mnist, mnist_imbalance
from mnist_helpers import mnist_config


def test_the_listed_splits_are_the_supplement_s_and_match_its_false_negative_rate():
    splits = mnist_imbalance.PAPER_SPLITS
    assert splits.shape == (47, 10)
    np.testing.assert_allclose(splits.sum(axis=1), 1.0, atol=2e-3)  # printed to 3 decimals
    np.testing.assert_allclose(mnist_imbalance.class_proportions(0), splits[0] / splits[0].sum())
    # Supplement section 2: the 50 splits' expected false negatives sum_i p_i^2 are 0.119 +- 0.008.
    squares = (splits ** 2).sum(axis=1)
    assert abs(squares.mean() - 0.119) < 0.003 and abs(squares.std() - 0.008) < 0.002
    # The Dirichlet constant is the method of moments on the rows.
    mean, var = splits.mean(), splits.var()
    assert abs((mean * (1 - mean) / var - 1) / 10 - mnist_imbalance.DIRICHLET_ALPHA) < 0.01


def test_drawn_splits_are_seeded_and_look_like_the_paper_s():
    first = mnist_imbalance.class_proportions(47)
    np.testing.assert_array_equal(first, mnist_imbalance.class_proportions(47))
    assert not np.allclose(first, mnist_imbalance.class_proportions(48))
    drawn = np.stack([mnist_imbalance.class_proportions(k) for k in range(47, 547)])
    np.testing.assert_allclose(drawn.sum(axis=1), 1.0)
    assert abs((drawn ** 2).sum(axis=1).mean() - 0.12) < 0.005


def test_bad_splits_are_refused():
    with pytest.raises(ValueError, match="--class_split must be -1"):
        mnist_imbalance.check_split(-2)
    with pytest.raises(ValueError, match="--class_split must be -1"):
        get_family("mnist").check_config(mnist_config(class_split=-3))


def test_counts_are_the_largest_that_follow_the_proportions():
    proportions = np.array([0.5, 0.25, 0.25] + [0.0] * 7) + 1e-12
    counts = mnist_imbalance.class_counts(proportions / proportions.sum(), np.array([100, 100, 40] + [10] * 7))
    np.testing.assert_array_equal(counts[:3], [80, 40, 40])  # N = 40 / 0.25 = 160
    available = np.array([5923, 6742, 5958, 6131, 5842, 5421, 5918, 6265, 5851, 5949])  # real MNIST
    for split in (0, 17, 46, 60):
        p = mnist_imbalance.class_proportions(split)
        counts = mnist_imbalance.class_counts(p, available)
        assert np.all(counts <= available) and np.any(counts >= available - 1)
        np.testing.assert_allclose(counts / counts.sum(), p, atol=2e-4)


def test_subsampling_keeps_the_proportions_and_leaves_the_test_set_alone(tmp_path, small_mnist):
    rng = np.random.default_rng(0)
    labels = rng.permutation(np.repeat(np.arange(10), 600))
    kept = mnist_imbalance.subsample(labels, 5)
    np.testing.assert_array_equal(kept, mnist_imbalance.subsample(labels, 5))
    assert np.all(np.diff(kept) > 0)
    counts = np.bincount(labels[kept], minlength=10)
    np.testing.assert_allclose(counts / counts.sum(), mnist_imbalance.class_proportions(5), atol=2e-3)

    path = str(tmp_path / "mnist.npz")
    np.savez(path, **small_mnist)
    whole = mnist.load_mnist(mnist_config(data_path=path))
    split = mnist.load_mnist(mnist_config(data_path=path, class_split=5))
    assert 10 <= len(split.y_train) < len(whole.y_train)
    np.testing.assert_array_equal(split.x_test, whole.x_test)
    np.testing.assert_array_equal(split.y_test, whole.y_test)
    # Every kept image is an original training image with its own label.
    order = mnist_imbalance.subsample(whole.y_train, 5)
    np.testing.assert_array_equal(split.x_train, whole.x_train[order])
    np.testing.assert_array_equal(split.y_train, whole.y_train[order])
    described = mnist_imbalance.describe(5, whole.y_train)
    assert described["counts"] == np.bincount(split.y_train, minlength=10).tolist()


def test_the_images_stream_draws_from_the_split(tmp_path, small_mnist):
    path = str(tmp_path / "mnist.npz")
    np.savez(path, **small_mnist)
    config = mnist_config(data_path=path, class_split=23, holdout_digit="none", batch_size=8)
    kept = set(mnist_imbalance.subsample(small_mnist["y_train"], 23).tolist())
    stream = get_family("mnist").stream("images")(config, 0, 0)
    seen = set()
    for batch in stream.take(30):
        images = batch["images"].numpy()
        seen |= set((images[:, 0, 1, 0].astype(int) + 256 * images[:, 0, 2, 0].astype(int)).tolist())  # the coded index
    assert seen <= kept and len(seen) > len(kept) // 2


def test_stacks_of_a_split_come_in_proportion_to_its_digits(tmp_path):
    """Under --class_split a digit makes stacks in proportion to its training images (set B's
    digit among the others); without a split the stack digits are uniform, as in the paper."""
    from mnist_helpers import coded_split

    x_train, y_train = coded_split(300, 0)
    x_test, y_test = coded_split(4, 5000)
    path = str(tmp_path / "mnist.npz")
    np.savez(path, x_train=x_train, y_train=y_train, x_test=x_test, y_test=y_test)
    split = 25  # digits 0 and 1 are rare (4%, 2%), 2 and 3 common (20%, 19%)
    config = mnist_config(data_path=path, class_split=split, holdout_digit="none", set_size=4, pairs_per_step=4)
    counts = np.bincount(mnist.load_mnist(config).y_train, minlength=10)

    def stack_digits(config):
        digits = []
        for batch in get_family("mnist").make_dataset(config, 3).take(150):
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
