"""The identity-preserving digit augmentation (abc_tf/data/digit_augment.py) and MNIST's
augmentation baseline: two augmented views of the same unconstrained sets, the held-out digit
and the class split respected, and a few steps of ABC and of the contrastive loss trained on it."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from abc_tf.config import get_preset
from abc_tf.data import digit_augment, mnist, mnist_imbalance
from abc_tf.runs import training

PRESET = get_preset("mnist_abc_augmentation")


def coded_config(tmp_path, small_mnist, **overrides):
    path = str(tmp_path / "mnist.npz")
    np.savez(path, **small_mnist)
    return PRESET.replace(**{"data_path": path, "class_split": -1, "set_size": 16, "pairs_per_step": 2, **overrides})


def decoded(images: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(digit, training index) that the coded MNIST writes into pixels (0, 0), (0, 1), (0, 2)."""
    pixels = np.rint(images[..., 0, :3, 0] * 255).astype(int)
    return (pixels[..., 0] - 5) // 20, pixels[..., 1] + 256 * pixels[..., 2]


def identity(images, seed, **kwargs):
    del seed, kwargs
    return tf.cast(images, tf.float32)


def test_augmentation_keeps_the_digit_and_is_seeded():
    rng = np.random.default_rng(1)
    images = np.zeros((8, 28, 28, 1), np.float32)
    images[:, 8:20, 12:16] = rng.uniform(0.5, 1.0, size=(8, 12, 4, 1))
    seed = tf.constant([1, 2], tf.int64)
    same = digit_augment.augment(images, seed, max_degrees=0.0, zoom=(1.0, 1.0), elastic_pixels=0.0).numpy()
    np.testing.assert_allclose(same, images, atol=1e-5)
    out = digit_augment.augment(images, seed).numpy()
    np.testing.assert_array_equal(out, digit_augment.augment(images, seed).numpy())
    assert not np.allclose(out, images)
    assert out.min() >= 0 and out.max() <= 1
    # The image stays recognisably itself: well correlated with the original.
    for before, after in zip(images.reshape(8, -1), out.reshape(8, -1)):
        assert np.corrcoef(before, after)[0, 1] > 0.4
    # Rotation and zoom alone: a zoom in 0.9-1.1 changes the ink by its square at most.
    rigid = digit_augment.augment(images, seed, elastic_pixels=0.0).numpy()
    ink = rigid.sum(axis=(1, 2, 3)) / images.sum(axis=(1, 2, 3))
    assert np.all((ink > 0.8 ** 1.05) & (ink < 1.1 ** 2 * 1.05)), ink
    # A 90-degree turn without zoom or distortion turns a vertical bar horizontal.
    bar = np.zeros((1, 28, 28, 1), np.float32)
    bar[0, 4:24, 13:15] = 1.0
    turned = digit_augment.augment(bar, seed, zoom=(1.0, 1.0), elastic_pixels=0.0, max_degrees=90.0).numpy()[0, ..., 0]
    angle = tf.random.stateless_uniform([1], tf.random.experimental.stateless_split(seed, 3)[0], -1.0, 1.0).numpy()[0] * 90
    if abs(angle) > 80:
        assert turned[13:15, 6:22].mean() > 0.8 and turned[4:10, 13:15].mean() < 0.2


def test_augmentation_compiles_with_xla():
    """The Elastic-InfoGAN presets compile their whole step with XLA, augmentation included (no
    op without an XLA CPU kernel, such as a bicubic resize). XLA draws its own random numbers
    from a seed, so its views are checked for sense, not against the graph's."""
    images = np.random.default_rng(2).uniform(size=(4, 28, 28, 1)).astype(np.float32)
    seed = tf.constant([3, 4], tf.int64)
    compiled = tf.function(digit_augment.augment, jit_compile=True)
    still = compiled(images, seed, max_degrees=0.0, zoom=(1.0, 1.0), elastic_pixels=0.0).numpy()
    np.testing.assert_allclose(still, images, atol=1e-5)
    moved = compiled(images, seed).numpy()
    assert moved.shape == images.shape and np.all((moved >= 0) & (moved <= 1)) and not np.allclose(moved, images)



def test_view_pairs_are_two_augmentations_of_one_draw():
    # Images told apart by their ink (the coded MNIST's differ only in pixels T moves).
    rng = np.random.default_rng(0)
    images = np.zeros((40, 28, 28), np.uint8)
    for image in images:
        for row, col in rng.integers(4, 19, size=(3, 2)):
            image[row:row + 5, col:col + 5] = 255
    batch = next(iter(digit_augment.make_view_pair_dataset(images, set_size=16, pairs_per_step=3, seed=5)))
    assert set(batch) == {"set_a", "set_a_view2"}
    for value in batch.values():
        assert value.shape == (3, 16, 28, 28, 1) and value.dtype == tf.float32
        assert 0.0 <= float(tf.reduce_min(value)) and float(tf.reduce_max(value)) <= 1.0
    first, second = batch["set_a"].numpy(), batch["set_a_view2"].numpy()
    assert not np.allclose(first, second)  # independently augmented
    # Each view is recognisably its partner's image: far better correlated with it than with the rest.
    for set_a, set_b in zip(first.reshape(3, 16, -1), second.reshape(3, 16, -1)):
        correlation = np.corrcoef(set_a, set_b)[:16, 16:]
        assert np.mean(np.argmax(correlation, axis=1) == np.arange(16)) > 0.8
    again = next(iter(digit_augment.make_view_pair_dataset(images, 16, 3, seed=5)))
    np.testing.assert_array_equal(again["set_a_view2"].numpy(), second)


def test_view_pairs_share_their_sources(monkeypatch, small_mnist):
    monkeypatch.setattr(digit_augment, "augment", identity)  # the un-augmented sources
    images = small_mnist["x_train"]
    for batch in digit_augment.make_view_pair_dataset(images, 16, 3, seed=6).take(3):
        np.testing.assert_array_equal(batch["set_a"].numpy(), batch["set_a_view2"].numpy())
        digits, rows = decoded(batch["set_a"].numpy())
        np.testing.assert_allclose(batch["set_a"].numpy(), images[rows][..., None] / 255.0, atol=1e-6)
        assert all(len(set(row)) == 16 for row in rows)  # distinct images within a set
    with pytest.raises(ValueError, match="set_size"):
        digit_augment.make_view_pair_dataset(images[:10], 16, 1, seed=0)


def test_mnist_baseline_draws_every_training_digit_but_the_held_out_one(monkeypatch, tmp_path, small_mnist):
    monkeypatch.setattr(digit_augment, "augment", identity)
    config = coded_config(tmp_path, small_mnist, holdout_digit="3")
    training.check_config(config)
    seen = set()
    for batch in mnist.make_dataset(config, seed=2).take(8):
        digits, rows = decoded(batch["set_a"].numpy())
        np.testing.assert_array_equal(digits, small_mnist["y_train"][rows])
        assert all(len(set(row)) > 1 for row in digits)  # no digit constraint within a set
        seen |= set(digits.ravel().tolist())
    assert seen == set(range(10)) - {3}
    # The class split's subsample is the pool.
    split = coded_config(tmp_path, small_mnist, class_split=3, holdout_digit="none", set_size=8)
    kept = set(mnist_imbalance.subsample(small_mnist["y_train"], 3).tolist())
    for batch in mnist.make_dataset(split, seed=3).take(4):
        assert set(decoded(batch["set_a"].numpy())[1].ravel().tolist()) <= kept


def test_mnist_baseline_is_for_abc_and_contrastive_only(tmp_path, small_mnist):
    with pytest.raises(ValueError, match="augmentation_baseline"):
        training.check_config(coded_config(tmp_path, small_mnist, method="vae"))
    with pytest.raises(ValueError, match="double_augmentation"):
        training.check_config(coded_config(tmp_path, small_mnist, method="contrastive", augmentation_baseline=False))


@pytest.mark.parametrize("method", ["abc", "contrastive"])
def test_a_few_steps_train_on_the_baseline(tmp_path, small_mnist, method):
    config = coded_config(tmp_path, small_mnist, method=method, steps=3, log_every=3, set_size=8, pairs_per_step=1)
    result = training.train(config, str(tmp_path / method), verbose=0)
    assert result.final_step == 3
    assert np.isfinite(result.history["loss"]).all() and "cycle_accuracy" in result.history
