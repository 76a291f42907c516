"""MNIST style isolation (abc_tf.data.mnist): the source choice, digit stacks, the procedural
digits, the retrieval grid and the style measures. Never needs the real MNIST; the file formats
are tested in tests/test_mnist_formats.py."""

import json
import os

import numpy as np
import pytest

from abc_tf.config import get_preset
from abc_tf.data import digit_style, get_family, mnist
from abc_tf.data.render import digits as renderer
from abc_tf.evaluation import mnist_style
from test_mnist_formats import small_arrays, write_idx_dir


@pytest.fixture(scope="module")
def small_mnist():
    return small_arrays()


def mnist_config(**overrides):
    return get_preset("mnist").replace(**overrides)

# ----------------------------------------------------------------------------- source choice


def test_auto_source_detects_idx_directories_and_npz_files(tmp_path, small_mnist):
    write_idx_dir(tmp_path / "idx", small_mnist, compress=True, dotted=True)
    assert mnist.resolve_source(mnist_config(data_path=str(tmp_path / "idx")))[0] == "idx"
    path = str(tmp_path / "mnist.npz")
    np.savez(path, **small_mnist)
    assert mnist.resolve_source(mnist_config(data_path=path)) == ("npz", path)
    np.testing.assert_array_equal(mnist.load_mnist(mnist_config(data_path=path)).y_test, small_mnist["y_test"])
    write_idx_dir(tmp_path / "partial", small_mnist, compress=True)
    os.remove(tmp_path / "partial" / "t10k-labels-idx1-ubyte.gz")
    with pytest.raises(ValueError, match=r"t10k-labels-idx1-ubyte\[\.gz\]"):
        mnist.resolve_source(mnist_config(data_path=str(tmp_path / "partial")))


def test_source_choice_errors(tmp_path):
    with pytest.raises(ValueError, match="Unknown MNIST data_source 'h5'"):
        mnist.resolve_source(mnist_config(data_source="h5"))
    with pytest.raises(ValueError, match="--data_source=idx needs --data_path"):
        mnist.resolve_source(mnist_config(data_source="idx"))
    with pytest.raises(ValueError, match="does not exist"):
        mnist.resolve_source(mnist_config(data_path=str(tmp_path / "missing")))
    assert mnist.resolve_source(mnist_config(data_source="procedural")) == ("procedural", "")


def test_auto_source_prefers_a_prepared_tfds(monkeypatch):
    """With tfds prepared and no data_path, "auto" picks tfds before the procedural digits."""
    import tensorflow_datasets as tfds

    with tfds.testing.mock_data(num_examples=30):
        monkeypatch.setattr(type(tfds.builder("mnist")), "is_prepared", lambda self: True)
        assert mnist.resolve_source(mnist_config()) == ("tfds", "")


# ----------------------------------------------------------------------------- stacks


def decode(stacks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Digit and image index of every image of [..., 28, 28, 1] stacks."""
    digit = (stacks[..., 0, 0, 0].astype(np.int64) - 5) // 20
    index = stacks[..., 0, 1, 0].astype(np.int64) + 256 * stacks[..., 0, 2, 0].astype(np.int64)
    return digit, index


def test_stacks_are_pure_and_never_show_the_held_out_digit(tmp_path, small_mnist):
    path = str(tmp_path / "mnist.npz")
    np.savez(path, **small_mnist)
    config = mnist_config(data_path=path, set_size=8, pairs_per_step=3)
    dataset = get_family("mnist").make_dataset(config, seed=5)
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
            assert all(len(set(row)) == len(row) for row in indices.tolist()), "an image repeats within a stack"
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
        mnist.make_dataset(mnist_config(data_path=path, holdout_digit="10"), seed=0)
    with pytest.raises(ValueError, match=r"--set_size=64: only 0 of 9 group\(s\) hold that many training images.*digit 0 \(12\)"):
        mnist.make_dataset(mnist_config(data_path=path), seed=0)
    with pytest.raises(ValueError, match="at least two training digits"):
        mnist.make_stack_dataset(small_mnist["x_train"], small_mnist["y_train"], [4], 4, 1, False, 0)
    assert mnist.parse_holdout_digit("none") is None and mnist.parse_holdout_digit("3") == 3
    assert mnist.training_digits(mnist_config(holdout_digit="none")) == list(range(10))


# ----------------------------------------------------------------------------- procedural digits


def test_procedural_digits_are_deterministic_and_split_like_mnist():
    train, test = renderer.procedural_mnist(seed=0, train_size=120, test_size=40)
    again, _ = renderer.procedural_mnist(seed=0, train_size=120, test_size=40)
    np.testing.assert_array_equal(train.images, again.images)
    assert train.images.shape == (120, 28, 28) and test.images.shape == (40, 28, 28)
    assert train.images.dtype == np.uint8 and np.bincount(train.labels, minlength=10).tolist() == [12] * 10
    assert not np.array_equal(train.images[:40], test.images)
    # Ink on black like MNIST: bright strokes, a border that is (almost always) dark.
    border = np.concatenate([train.images[:, [0, -1], :].reshape(120, -1), train.images[:, :, [0, -1]].reshape(120, -1)], 1)
    assert train.images.max() == 255 and np.mean(border.max(axis=1) > 30) < 0.05
    # Default split sizes are MNIST's.
    import inspect

    parameters = inspect.signature(renderer.procedural_mnist).parameters
    assert (parameters["train_size"].default, parameters["test_size"].default) == (60_000, 10_000)


def test_procedural_style_factors_show_in_the_measures():
    labels = np.repeat(np.arange(10), 4)
    left = renderer.render_digits(40, 3, labels, {"slant": -0.4, "rotation": 0.0})
    right = renderer.render_digits(40, 3, labels, {"slant": 0.4, "rotation": 0.0})
    assert np.all(digit_style.slant(right.images) > digit_style.slant(left.images))
    thin = renderer.render_digits(40, 3, labels, {"thickness": 1.6})
    thick = renderer.render_digits(40, 3, labels, {"thickness": 4.0})
    assert np.all(digit_style.stroke_thickness(thick.images) > digit_style.stroke_thickness(thin.images) + 1.0)
    with pytest.raises(ValueError, match="Unknown style factor 'colour'"):
        renderer.render_digits(2, 0, style_overrides={"colour": 1.0})


# ----------------------------------------------------------------------------- style measures


def bar(angle_from_vertical: float, width: float) -> np.ndarray:
    """A 16 px long bar of the given width through pixel (14, 14), its top turned right by the angle."""
    y, x = np.mgrid[0:28, 0:28].astype(np.float64)
    direction = np.array([np.sin(angle_from_vertical), -np.cos(angle_from_vertical)])  # (x, y), up
    rx, ry = x - 14.0, y - 14.0
    along = rx * direction[0] + ry * direction[1]
    across = np.abs(rx * direction[1] - ry * direction[0])
    # Anti-aliased edges: coverage falls off linearly over one pixel.
    ink = np.clip(width / 2 + 0.5 - across, 0, 1) * np.clip(8.5 - np.abs(along), 0, 1)
    return np.round(ink * 255).astype(np.uint8)


def test_slant_sign_and_thickness_on_hand_made_bars():
    images = np.stack([bar(0.3, 2), bar(-0.3, 2), bar(0.0, 2)])
    slants = digit_style.slant(images)
    assert slants[0] > 0.2 and slants[1] < -0.2 and abs(slants[2]) < 1e-9
    np.testing.assert_allclose(slants[0], np.tan(0.3), atol=0.05)  # shear of a straight bar = tan(angle)
    # (Oblique, a one-pixel line never reaches full ink and reads as its blurred width.)
    for angle, true_widths in ((0.0, np.array([1, 2, 3, 4, 5])), (0.5, np.array([2, 3, 4, 5]))):
        widths = digit_style.stroke_thickness(np.stack([bar(angle, w) for w in true_widths]))
        assert np.all(np.diff(widths) > 0.3)
        # A 16 px bar has area 16 w and perimeter 2 (16 + w): 2 A / P = 16 w / (16 + w).
        np.testing.assert_allclose(widths, 16 * true_widths / (16 + true_widths), rtol=0.1)
    assert digit_style.slant(np.zeros((1, 28, 28), np.uint8))[0] == 0 and digit_style.stroke_thickness(np.zeros((1, 28, 28)))[0] == 0


# ----------------------------------------------------------------------------- retrieval


def test_retrieval_grid_rows_hold_the_right_classes(tmp_path):
    rng = np.random.default_rng(1)
    labels = np.repeat(np.arange(10), 7)
    embeddings = rng.normal(size=(len(labels), 4))
    grid = mnist_style.retrieval_grid(embeddings, labels, seed=3)
    assert grid.indices.shape == (10, 10)
    # Column c holds an image of digit c; the diagonal holds the queries.
    assert np.all(labels[grid.indices] == np.arange(10)[None, :])
    for row in range(10):
        query = embeddings[grid.indices[row, row]]
        for col in range(10):
            if col != row:  # the retrieved image is the closest of its class
                members = np.flatnonzero(labels == col)
                best = members[np.argmin(np.sum((embeddings[members] - query) ** 2, axis=1))]
                assert grid.indices[row, col] == best
    # The loss's similarities: l2 ranks as l2sq does; the scores are s(query, retrieved).
    l2 = mnist_style.retrieval_grid(embeddings, labels, similarity="l2", seed=3)
    assert np.array_equal(l2.indices, grid.indices)
    distances = np.linalg.norm(embeddings[grid.indices] - embeddings[np.diag(grid.indices)][:, None], axis=-1)
    np.testing.assert_allclose(grid.similarity, -distances**2, atol=1e-9)
    np.testing.assert_allclose(l2.similarity, -np.sqrt(distances**2 + 1e-9), atol=1e-9)
    images = rng.integers(0, 255, size=(len(labels), 28, 28), dtype=np.uint8)
    mnist_style.plot_retrieval_grids(images, [("a", grid), ("b", grid)], str(tmp_path / "grid.png"), holdout_digit=9)
    assert (tmp_path / "grid.png").stat().st_size > 1000
    with pytest.raises(ValueError, match="no image of digit"):
        mnist_style.retrieval_grid(embeddings[labels < 9], labels[labels < 9])


def test_evaluate_mnist_run_writes_figures_and_metrics(tmp_path):
    import keras

    import models

    # A small procedural test split stands in for MNIST through an .npz.
    train, test = renderer.procedural_mnist(seed=1, train_size=200, test_size=200)
    path = str(tmp_path / "digits.npz")
    np.savez(path, x_train=train.images, y_train=train.labels, x_test=test.images, y_test=test.labels)
    config = mnist_config(data_path=path, set_size=8)
    keras.utils.set_random_seed(1)
    encoder = models.build("s4", embedding_dim=8)
    metrics = mnist_style.evaluate_mnist_run(encoder, config, str(tmp_path / "eval"), probe_epochs=2)
    for name in ("retrieval.png", "pca.png", mnist_style.METRICS_FILE):
        assert (tmp_path / "eval" / name).is_file()
    written = json.loads((tmp_path / "eval" / mnist_style.METRICS_FILE).read_text())
    assert written["holdout_digit"] == 9 and written["data_source"].startswith("npz:")
    for model in ("trained", "untrained"):
        entry = written[model]
        assert set(entry["style_r2"]) == {"slant", "thickness", "ink", "width"}
        assert "ridge_within_digit_holdout_digit" in entry["style_r2"]["slant"]
        assert 0.0 <= entry["digit_probe_accuracy"]["noise_at_length_scale"] <= 1.0
        assert np.array(entry["retrieval_grid"]["indices"]).shape == (10, 10)
    assert metrics["trained"]["pca_top2_variance"] <= 1.0
