"""The identity-preserving digit augmentation (abc_tf/data/mnist/digit_augment.py: the authors'
Augmentor rotate and zoom, checked by hand and against PIL) and MNIST's augmentation baseline:
two augmented views of the same unconstrained sets, the held-out digit and the class split
respected, and a few steps of ABC and of the contrastive loss trained on it."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from abc_tf import methods
from abc_tf.runs import checks
from abc_tf.runs.experiments import choose, get_preset
from abc_tf.data.mnist import digit_augment
from abc_tf.data.mnist import family as mnist
from abc_tf.data.mnist import sources as mnist_sources
from abc_tf.runs import training

PRESET = get_preset("mnist_abc_augmentation")


def coded_config(tmp_path, small_mnist, method=None, **overrides):
    """The preset on the coded MNIST; ``method``: another method trained on sets."""
    path = str(tmp_path / "mnist.npz")
    np.savez(path, **small_mnist)
    return choose(
        PRESET,
        method=method,
        **{"path": path, "class_split": -1, "set_size": 16, "pairs_per_step": 2, **overrides},
    )


def decoded(images: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(digit, training index) that the coded MNIST writes into pixels (0, 0), (0, 1), (0, 2)."""
    pixels = np.rint(images[..., 0, :3, 0] * 255).astype(int)
    return (pixels[..., 0] - 5) // 20, pixels[..., 1] + 256 * pixels[..., 2]


def identity(images, seed, **kwargs):
    del seed, kwargs
    return tf.cast(images, tf.float32)


def test_augmentor_s_rotate_crop_worked_by_hand():
    """PIL's canvas for 28 x 28 at 20 degrees: the corners reach 14 +- 14 (cos 20 + sin 20) =
    14 +- 17.94, so floor -4 to ceil 32: 36. Augmentor's box with t = tan 20 = 0.36397:
    E = t (36 - 36 t) - t^2 = 8.20, A = t (36 - E) = 10.12, so (8, 10, 28, 26): 20 x 16 pixels
    stretched to 28 x 28. At 5 degrees: canvas 2 ceil(15.17) = 32, E = 2.55, A = 2.58, (3, 3, 29, 29)."""
    assert digit_augment.rotation_crop(20, 28, 28) == (36, 36, (8, 10, 28, 26))
    assert digit_augment.rotation_crop(-20, 28, 28) == (36, 36, (8, 10, 28, 26))
    assert digit_augment.rotation_crop(5, 28, 28) == (32, 32, (3, 3, 29, 29))
    assert digit_augment.rotation_crop(0, 28, 28) == (28, 28, (0, 0, 28, 28))
    with pytest.raises(ValueError, match="45 degrees"):
        digit_augment.rotation_crop(45, 28, 28)


def test_augmentor_s_draws():
    """Rotate: a side, then 0..20 degrees on it, so 0 twice as often as any other angle; zoom:
    uniform in 0.9-1.1 rounded to 2 decimals, so 0.90 and 1.10 half as often as the others."""
    degrees, factors = digit_augment.transform_parameters(tf.constant([4, 5], tf.int64), 84_000)
    degrees, factors = degrees.numpy(), factors.numpy()
    shares = np.bincount(degrees + 20, minlength=41) / len(degrees)
    assert degrees.min() == -20 and degrees.max() == 20
    assert abs(shares[20] - 2 / 42) < 0.004  # 5.4 standard errors of a share of 2/42 in 84,000
    np.testing.assert_allclose(np.delete(shares, 20), 1 / 42, atol=0.003)  # 5.7 of 1/42's
    hundredths = factors * 100
    np.testing.assert_allclose(hundredths, np.round(hundredths), atol=1e-3)  # float32: 1e-5 off at most
    values, counts = np.unique(np.round(hundredths).astype(int), return_counts=True)
    np.testing.assert_array_equal(values, np.arange(90, 111))
    np.testing.assert_allclose(counts[[0, -1]] / len(factors), 0.025, atol=0.003)  # 5.6 standard errors


def pil_augmentor(image: np.ndarray, degrees: int, factor: float) -> np.ndarray:
    """Augmentor's rotate and zoom of a uint8 28 x 28 image with PIL (bicubic at every step)."""
    from PIL import Image

    picture = Image.fromarray(image)
    rotated = picture.rotate(degrees, expand=True, resample=Image.BICUBIC)
    canvas_w, canvas_h, box = digit_augment.rotation_crop(degrees, 28, 28)
    assert rotated.size == (canvas_w, canvas_h)  # PIL's own canvas
    picture = rotated.crop(box).resize((28, 28), resample=Image.BICUBIC)
    size = int(round(28 * factor))
    zoomed = picture.resize((size, size), resample=Image.BICUBIC)
    corner = int(np.floor(size / 2 - 14))
    return np.asarray(zoomed.crop((corner, corner, corner + 28, corner + 28)), np.float32) / 255.0


def test_the_transform_is_augmentor_s_rotate_and_zoom():
    """Against PIL doing Augmentor's steps: the same geometry (where the ink lands, to a fraction
    of a pixel), bilinear against bicubic in the detail."""
    rng = np.random.default_rng(3)
    image = np.zeros((28, 28), np.uint8)
    for row, col in rng.integers(5, 19, size=(4, 2)):
        image[row : row + 5, col : col + 3] = 255
    image[4:8, 16:24] = 255  # asymmetric, so a wrong turn or flip shows
    rows, cols = np.mgrid[:28, :28]
    # A zoom below 1 after a rotation also shows that what the rotation's crop cut off stays out.
    for degrees, factor in ((20, 1.1), (-13, 0.9), (7, 1.0), (0, 0.93), (-20, 0.9), (17, 0.91)):
        ours = digit_augment.transform(
            image[None, ..., None] / 255.0, tf.constant([degrees]), tf.constant([factor])
        ).numpy()[0, ..., 0]
        theirs = pil_augmentor(image, degrees, factor)
        for out in (ours, theirs):
            assert out.sum() > 20
        centroid = lambda out: np.array([(out * rows).sum(), (out * cols).sum()]) / out.sum()  # noqa: E731
        np.testing.assert_allclose(centroid(ours), centroid(theirs), atol=0.2)  # measured: 0.1 at most
        assert abs(ours.sum() / theirs.sum() - 1) < 0.04  # 0.02
        assert np.corrcoef(ours.ravel(), theirs.ravel())[0, 1] > 0.97  # 0.98


def test_augmentation_keeps_the_digit_and_is_seeded():
    rng = np.random.default_rng(1)
    images = np.zeros((8, 28, 28, 1), np.float32)
    images[:, 8:20, 12:16] = rng.uniform(0.5, 1.0, size=(8, 12, 4, 1))
    seed = tf.constant([1, 2], tf.int64)
    same = digit_augment.augment(images, seed, max_degrees=0, zoom=(1.0, 1.0)).numpy()
    # The identity's float32 coordinates land within a few roundings of 28 (2e-6 each) of the
    # pixels: bilinear weights that small on neighbours in [0, 1].
    np.testing.assert_allclose(same, images, atol=1e-5)
    out = digit_augment.augment(images, seed).numpy()
    np.testing.assert_array_equal(out, digit_augment.augment(images, seed).numpy())
    assert not np.allclose(out, images)
    assert out.min() >= 0 and out.max() <= 1
    # The image stays recognisably itself: well correlated with the original.
    for before, after in zip(images.reshape(8, -1), out.reshape(8, -1)):
        assert np.corrcoef(before, after)[0, 1] > 0.4
    # The ink grows at most by the rotate crop's largest stretch of the area and the zoom's square.
    stretch = max(
        28 * 28 / ((box[2] - box[0]) * (box[3] - box[1]))
        for _, _, box in (digit_augment.rotation_crop(d, 28, 28) for d in range(21))
    )
    ink = out.sum(axis=(1, 2, 3)) / images.sum(axis=(1, 2, 3))
    assert np.all((ink > 0.9**2 * 0.95) & (ink < stretch * 1.1**2 * 1.05)), ink
    # The elastic field is ours and opt in: it moves the same draws' images further.
    elastic = digit_augment.augment(images, seed, elastic_pixels=1.0).numpy()
    assert not np.allclose(elastic, out) and np.abs(elastic - out).mean() < np.abs(out - images).mean()


@pytest.mark.slow
def test_augmentation_compiles_with_xla():
    """The Elastic-InfoGAN presets compile their whole step with XLA, augmentation included (no
    op without an XLA CPU kernel, such as a bicubic resize). XLA draws its own random numbers
    from a seed, so its views are checked for sense, not against the graph's."""
    images = np.random.default_rng(2).uniform(size=(4, 28, 28, 1)).astype(np.float32)
    seed = tf.constant([3, 4], tf.int64)
    compiled = tf.function(digit_augment.augment, jit_compile=True)
    still = compiled(images, seed, max_degrees=0.0, zoom=(1.0, 1.0), elastic_pixels=0.0).numpy()
    np.testing.assert_allclose(still, images, atol=1e-5)  # as above: the identity's coordinates round
    moved = compiled(images, seed).numpy()
    assert (
        moved.shape == images.shape and np.all((moved >= 0) & (moved <= 1)) and not np.allclose(moved, images)
    )


@pytest.mark.slow
def test_view_pairs_are_two_augmentations_of_one_draw():
    # Images told apart by their ink (the coded MNIST's differ only in pixels T moves).
    rng = np.random.default_rng(0)
    images = np.zeros((40, 28, 28), np.uint8)
    for image in images:
        for row, col in rng.integers(4, 19, size=(3, 2)):
            image[row : row + 5, col : col + 5] = 255
    batch = next(iter(digit_augment.make_view_pair_dataset(images, set_size=16, pairs_per_step=3, seed=5)))
    assert set(batch) == {"set_a", "set_a_view2"}
    for value in batch.values():
        assert value.shape == (3, 16, 28, 28, 1) and value.dtype == tf.float32
        assert 0.0 <= float(tf.reduce_min(value)) and float(tf.reduce_max(value)) <= 1.0
    first, second = batch["set_a"].numpy(), batch["set_a_view2"].numpy()
    assert not np.allclose(first, second)  # independently augmented
    # Each view is recognisably its partner's image: mostly better correlated with it than with
    # the other 15 (chance: 1/16; the authors' rotate stretches a view up to 1.75 times, so two
    # views of one image overlap less than two of a plain rotation would).
    for set_a, set_b in zip(first.reshape(3, 16, -1), second.reshape(3, 16, -1)):
        correlation = np.corrcoef(set_a, set_b)[:16, 16:]
        assert np.mean(np.argmax(correlation, axis=1) == np.arange(16)) > 0.5
    again = next(iter(digit_augment.make_view_pair_dataset(images, 16, 3, seed=5)))
    np.testing.assert_array_equal(again["set_a_view2"].numpy(), second)


def test_view_pairs_share_their_sources(monkeypatch, small_mnist):
    monkeypatch.setattr(digit_augment, "augment", identity)  # the un-augmented sources
    images = small_mnist["x_train"]
    for batch in digit_augment.make_view_pair_dataset(images, 16, 3, seed=6).take(3):
        np.testing.assert_array_equal(batch["set_a"].numpy(), batch["set_a_view2"].numpy())
        digits, rows = decoded(batch["set_a"].numpy())
        np.testing.assert_allclose(
            batch["set_a"].numpy(), images[rows][..., None] / 255.0, atol=1e-6
        )  # k / 255 in float32: 6e-8
        assert all(len(set(row)) == 16 for row in rows)  # distinct images within a set
    with pytest.raises(ValueError, match="set_size"):
        digit_augment.make_view_pair_dataset(images[:10], 16, 1, seed=0)


def test_mnist_baseline_draws_every_training_digit_but_the_held_out_one(monkeypatch, tmp_path, small_mnist):
    monkeypatch.setattr(digit_augment, "augment", identity)
    config = coded_config(tmp_path, small_mnist, holdout_digit="3")
    checks.check_config(config)
    seen = set()
    for batch in mnist.make_dataset(config, seed=2).take(8):
        digits, rows = decoded(batch["set_a"].numpy())
        np.testing.assert_array_equal(digits, small_mnist["y_train"][rows])
        assert all(len(set(row)) > 1 for row in digits)  # no digit constraint within a set
        seen |= set(digits.ravel().tolist())
    assert seen == set(range(10)) - {3}
    # The class split's subsample is the pool.
    split = coded_config(tmp_path, small_mnist, class_split=3, holdout_digit="none", set_size=8)
    images = mnist_sources.load_mnist(split).x_train  # the split's, from training and test images
    kept = set((images[:, 0, 1].astype(int) + 256 * images[:, 0, 2].astype(int)).tolist())
    for batch in mnist.make_dataset(split, seed=3).take(4):
        assert set(decoded(batch["set_a"].numpy())[1].ravel().tolist()) <= kept


def test_mnist_baseline_is_for_abc_and_contrastive_only(tmp_path, small_mnist, monkeypatch):
    # A method on single images has no sets to augment: its batch part lacks the field.
    with pytest.raises(
        ValueError,
        match=r"no field 'augmentation_baseline' \(data family 'mnist', method 'vae'\)\. "
        r"Its fields: .*; batch: batch_size;",
    ):
        choose(PRESET, method="vae", augmentation_baseline=True)
    # A method on sets that does not train on two views is refused before any work.
    monkeypatch.setitem(methods.METHODS, "two_network", "toy_method:TWO_NETWORK")
    with pytest.raises(
        ValueError,
        match=r"^--batch.augmentation_baseline streams two augmented views .*; "
        r"--method=two_network does not train on them\. Methods that do: abc, contrastive\.$",
    ):
        checks.check_config(coded_config(tmp_path, small_mnist, method="two_network"))
    with pytest.raises(
        ValueError,
        match="^--method=contrastive trains on two views of every image: set --batch.double_augmentation",
    ):
        checks.check_config(
            coded_config(tmp_path, small_mnist, method="contrastive", augmentation_baseline=False)
        )


@pytest.mark.slow
@pytest.mark.parametrize("method", ["abc", "contrastive"])
def test_a_few_steps_train_on_the_baseline(tmp_path, small_mnist, method):
    config = coded_config(
        tmp_path, small_mnist, method=method, steps=3, log_every=3, set_size=8, pairs_per_step=1
    )
    result = training.train(config, str(tmp_path / method), verbose=0)
    assert result.final_step == 3
    assert np.isfinite(result.history["loss"]).all() and "cycle_accuracy" in result.history
