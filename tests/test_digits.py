"""The built-in procedural digits (abc_tf.data.mnist.digits): deterministic, split like MNIST,
ink on black, and their style factors show in the style measures."""

import inspect

import numpy as np
import pytest

from abc_tf.data.mnist import digit_style
from abc_tf.data.mnist import digits as renderer


def test_procedural_digits_are_deterministic_and_split_like_mnist():
    train, test = renderer.procedural_mnist(seed=0, train_size=120, test_size=40)
    again, _ = renderer.procedural_mnist(seed=0, train_size=120, test_size=40)
    np.testing.assert_array_equal(train.images, again.images)
    assert train.images.shape == (120, 28, 28) and test.images.shape == (40, 28, 28)
    assert train.images.dtype == np.uint8 and np.bincount(train.labels, minlength=10).tolist() == [12] * 10
    assert not np.array_equal(train.images[:40], test.images)
    # Ink on black like MNIST: bright strokes, a border that is (almost always) dark.
    border = np.concatenate(
        [train.images[:, [0, -1], :].reshape(120, -1), train.images[:, :, [0, -1]].reshape(120, -1)], 1
    )
    assert train.images.max() == 255 and np.mean(border.max(axis=1) > 30) < 0.05
    # Default split sizes are MNIST's.
    parameters = inspect.signature(renderer.procedural_mnist).parameters
    assert (parameters["train_size"].default, parameters["test_size"].default) == (60_000, 10_000)


def test_procedural_style_factors_show_in_the_measures():
    labels = np.repeat(np.arange(10), 4)
    left = renderer.render_digits(40, 3, labels, {"slant": -0.4, "rotation": 0.0})
    right = renderer.render_digits(40, 3, labels, {"slant": 0.4, "rotation": 0.0})
    assert np.all(digit_style.slant(right.images) > digit_style.slant(left.images))
    thin = renderer.render_digits(40, 3, labels, {"thickness": 1.6})
    thick = renderer.render_digits(40, 3, labels, {"thickness": 4.0})
    assert np.all(
        digit_style.stroke_thickness(thick.images) > digit_style.stroke_thickness(thin.images) + 1.0
    )
    with pytest.raises(ValueError, match="Unknown style factor 'colour'"):
        renderer.render_digits(2, 0, style_overrides={"colour": 1.0})
