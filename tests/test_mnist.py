"""The MNIST family (abc_tf.data.mnist.family): the source choice and the digit stacks. Never needs
the real MNIST. The file formats: tests/test_mnist_formats.py; the procedural digits:
tests/test_digits.py; the style measures: tests/test_digit_style.py; the evaluation:
tests/test_mnist_style.py."""

import functools
import os

import numpy as np
import pytest

from abc_tf.data import get_family
from abc_tf.data.mnist import family as mnist
from abc_tf.data.mnist import sources as mnist_sources
from abc_tf.data.mnist import formats as mnist_formats
from abc_tf.data.mnist import imbalance as mnist_imbalance
from abc_tf.data.mnist import digits as digit_renderer
from mnist_helpers import mnist_config, write_idx_dir


# ----------------------------------------------------------------------------- source choice


def test_auto_source_detects_idx_directories_and_npz_files(tmp_path, small_mnist):
    write_idx_dir(tmp_path / "idx", small_mnist, compress=True, dotted=True)
    assert mnist_sources.resolve_source(mnist_config(path=str(tmp_path / "idx")))[0] == "idx"
    path = str(tmp_path / "mnist.npz")
    np.savez(path, **small_mnist)
    assert mnist_sources.resolve_source(mnist_config(path=path)) == ("npz", path)
    np.testing.assert_array_equal(
        mnist_sources.load_mnist(mnist_config(path=path)).y_test, small_mnist["y_test"]
    )
    write_idx_dir(tmp_path / "partial", small_mnist, compress=True)
    os.remove(tmp_path / "partial" / "t10k-labels-idx1-ubyte.gz")
    with pytest.raises(ValueError, match=r"t10k-labels-idx1-ubyte\[\.gz\]"):
        mnist_sources.resolve_source(mnist_config(path=str(tmp_path / "partial")))


def test_source_choice_errors(tmp_path):
    with pytest.raises(
        ValueError,
        match="--data.source='h5' is not a source of data family 'mnist'; choose one of "
        "auto, procedural, idx, npz, tfds.",
    ):
        mnist_sources.resolve_source(mnist_config(source="h5"))
    with pytest.raises(ValueError, match="--data.source=idx needs --data.path"):
        mnist_sources.resolve_source(mnist_config(source="idx"))
    with pytest.raises(ValueError, match="does not exist"):
        mnist_sources.resolve_source(mnist_config(path=str(tmp_path / "missing")))
    assert mnist_sources.resolve_source(mnist_config(source="procedural")) == ("procedural", "")


def test_auto_source_prefers_a_prepared_tfds(monkeypatch):
    """With tfds prepared and no --data.path, "auto" picks tfds before the procedural digits."""
    import tensorflow_datasets as tfds

    with tfds.testing.mock_data(num_examples=30):
        monkeypatch.setattr(tfds.builder_cls("mnist"), "is_prepared", lambda self: True)
        assert mnist_sources.resolve_source(mnist_config()) == ("tfds", "")


def test_the_true_style_survives_the_cache_and_an_imbalanced_split(monkeypatch):
    """The procedural digits' test_style stays with the whole, read-only test split when the
    training split is subsampled (a small render stands in for 60k + 10k digits)."""
    small = functools.partial(digit_renderer.procedural_mnist, train_size=300, test_size=30)
    monkeypatch.setattr(digit_renderer, "procedural_mnist", small)
    mnist_sources._load_cached.cache_clear()
    try:
        data = mnist_sources.load_mnist(mnist_config(source="procedural", class_split=1))
    finally:
        mnist_sources._load_cached.cache_clear()  # no small render left for later tests
    assert len(data.y_train) < 300 and len(data.y_test) == 30
    assert set(data.test_style) == set(digit_renderer.STYLE_FACTORS)
    np.testing.assert_array_equal(
        data.test_style["slant"], small(mnist_formats.PROCEDURAL_DATA_SEED)[1].style["slant"]
    )
    assert not data.test_style["slant"].flags.writeable


# ----------------------------------------------------------------------------- stacks


def decode(stacks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Digit and image index of every image of [..., 28, 28, 1] stacks."""
    digit = (stacks[..., 0, 0, 0].astype(np.int64) - 5) // 20
    index = stacks[..., 0, 1, 0].astype(np.int64) + 256 * stacks[..., 0, 2, 0].astype(np.int64)
    return digit, index


def test_stacks_are_pure_and_never_show_the_held_out_digit(tmp_path, small_mnist):
    path = str(tmp_path / "mnist.npz")
    np.savez(path, **small_mnist)
    config = mnist_config(path=path, set_size=8, pairs_per_step=3)
    dataset = get_family("mnist").stream("sets")(config, seed=5)
    assert get_family("mnist").image_shape(config) == (28, 28, 1)
    seen = set()
    for batch in dataset.take(40):
        assert set(batch) == {"set_a", "set_b"}
        assert batch["set_a"].shape == (3, 8, 28, 28, 1) and batch["set_a"].dtype.name == "uint8"
        digit_a, index_a = decode(batch["set_a"].numpy())
        digit_b, index_b = decode(batch["set_b"].numpy())
        for digits, indices in ((digit_a, index_a), (digit_b, index_b)):
            assert np.all(digits == digits[:, :1]), "a stack mixes digits"
            assert np.all(small_mnist["y_train"][indices] == digits), "image/label mismatch"
            assert all(len(set(row)) == len(row) for row in indices.tolist()), (
                "an image repeats within a stack"
            )
        assert np.all(digit_a[:, 0] != digit_b[:, 0]), "a pair shows the same digit"
        seen.update(digit_a[:, 0].tolist() + digit_b[:, 0].tolist())
    assert 9 not in seen and seen == set(range(9))


def test_stacks_reproducible_holdout_none_and_same_digit(small_mnist):
    x, y = small_mnist["x_train"], small_mnist["y_train"]

    def take(seed, **kwargs):
        options = dict(digits=list(range(9)), set_size=6, pairs_per_step=4, allow_same_digit=False, seed=seed)
        options.update(kwargs)
        return [b for b in mnist.make_stack_dataset(x, y, with_digits=True, **options).take(25)]

    first, again, other = take(1), take(1), take(2)
    np.testing.assert_array_equal(first[3]["set_a"], again[3]["set_a"])
    assert any(not np.array_equal(a["set_a"], b["set_a"]) for a, b in zip(first, other))
    digits = take(0, digits=list(range(10)))
    assert {int(d) for b in digits for d in np.concatenate([b["digit_a"], b["digit_b"]])} == set(range(10))
    same = take(0, allow_same_digit=True, digits=[3, 4])
    assert any(np.any(b["digit_a"].numpy() == b["digit_b"].numpy()) for b in same)
    for batch in same:
        assert np.all(decode(batch["set_a"].numpy())[0] == batch["digit_a"].numpy()[:, None])


def test_bad_stack_settings_fail_clearly(tmp_path, small_mnist):
    path = str(tmp_path / "mnist.npz")
    np.savez(path, **small_mnist)
    with pytest.raises(ValueError, match="holdout_digit must be a digit 0-9 or 'none', got '10'"):
        mnist.make_dataset(mnist_config(path=path, holdout_digit="10"), seed=0)
    with pytest.raises(
        ValueError,
        match=r"--batch.set_size=64: only 0 of 9 group\(s\) hold that many training images.*digit 0 \(12\)",
    ):
        mnist.make_dataset(mnist_config(path=path), seed=0)
    with pytest.raises(ValueError, match="at least two training digits"):
        mnist.make_stack_dataset(small_mnist["x_train"], small_mnist["y_train"], [4], 4, 1, False, 0)
    assert mnist.parse_holdout_digit("none") is None and mnist.parse_holdout_digit("3") == 3
    assert mnist.training_digits(mnist_config(holdout_digit="none")) == list(range(10))


# ----------------------------------------------------------------------------- single images


def test_images_stream_draws_training_digits_uniformly_without_the_held_out_one(tmp_path, small_mnist):
    path = str(tmp_path / "mnist.npz")
    np.savez(path, **small_mnist)
    family = get_family("mnist")
    assert "images" in family.batch_formats
    stream = family.stream("images")(mnist_config(method="vae", path=path, batch_size=16), 3, 0)
    counts = np.zeros(len(small_mnist["y_train"]), np.int64)
    for batch in stream.take(60):
        assert set(batch) == {"images"} and batch["images"].shape == (16, 28, 28, 1)
        digits, indices = decode(batch["images"].numpy()[:, None])
        assert len(set(indices[:, 0].tolist())) == 16, "an image repeats within a batch"
        np.testing.assert_array_equal(small_mnist["y_train"][indices[:, 0]], digits[:, 0])
        counts[indices[:, 0]] += 1
    assert counts[small_mnist["y_train"] == 9].sum() == 0
    kept = counts[small_mnist["y_train"] != 9]
    assert kept.min() > 0, "some training image is never drawn"
    again = next(iter(family.stream("images")(mnist_config(method="vae", path=path, batch_size=16), 3, 0)))
    first = next(iter(stream))
    np.testing.assert_array_equal(first["images"], again["images"])


def test_images_stream_refuses_an_empty_pool():
    with pytest.raises(ValueError, match="No training images"):
        mnist.make_image_dataset(np.zeros((0, 28, 28), np.uint8), 4, seed=0)


def test_the_family_declares_its_labelled_digits_their_proportions_and_the_split(tmp_path, small_mnist):
    path = str(tmp_path / "mnist.npz")
    np.savez(path, **small_mnist)
    family = get_family("mnist")
    config = mnist_config(path=path, holdout_digit="9", class_split=-1)
    labelled = family.class_labelled_images(config)
    np.testing.assert_array_equal(labelled.test_images[..., 0], small_mnist["x_test"])
    np.testing.assert_array_equal(labelled.test_labels, small_mnist["y_test"])
    np.testing.assert_array_equal(
        labelled.train_images[..., 0], small_mnist["x_train"]
    )  # the held-out 9s too
    np.testing.assert_array_equal(labelled.train_labels, small_mnist["y_train"])
    assert labelled.train_labels.dtype == np.int64 and labelled.held_out == 9
    # 12 training images of each digit but the 9: 12 / 108 and 1 / 9 are the same correctly
    # rounded quotient, so equal.
    np.testing.assert_array_equal(family.class_proportions(config), [1 / 9] * 9 + [0.0])
    assert family.class_split_description(config) is None
    # Split 5 from the pool of all 16 images per digit (tests/test_mnist_imbalance.py).
    split = config.replace(class_split=5, holdout_digit="none")
    counts = mnist_imbalance.class_counts(mnist_imbalance.split_counts(5), np.full(10, 16))
    np.testing.assert_array_equal(family.class_proportions(split), counts / counts.sum())  # the same division
    described = family.class_split_description(split)
    assert (
        described["class_split"] == 5
        and described["pool"] == "all"
        and described["counts"] == counts.tolist()
    )
