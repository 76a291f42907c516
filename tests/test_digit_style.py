"""Style measures of digit images (abc_tf.data.mnist.digit_style): slant and stroke thickness on
hand-made bars of known angle and width."""

import numpy as np
import pytest

from abc_tf.data.mnist import digit_style


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
    assert (
        digit_style.slant(np.zeros((1, 28, 28), np.uint8))[0] == 0
        and digit_style.stroke_thickness(np.zeros((1, 28, 28)))[0] == 0
    )


def test_style_measures_of_uint8_float_and_channel_images_agree():
    images = np.stack([bar(0.3, 2), bar(0.0, 4)])
    measures = digit_style.style_measures(images)
    assert set(measures) == {"slant", "thickness", "ink", "width"}
    np.testing.assert_allclose(measures["slant"], digit_style.slant(images))
    np.testing.assert_allclose(measures["thickness"], digit_style.stroke_thickness(images))
    np.testing.assert_allclose(measures["ink"], images.sum(axis=(1, 2)) / 255.0)
    assert measures["width"][0] > measures["width"][1] > 0  # the leaning bar spreads wider in x
    # uint8 ink is divided by 255; float ink is taken as it is; [N, H, W, 1] is [N, H, W].
    for same in (images / 255.0, images[..., None]):
        for name, values in digit_style.style_measures(same).items():
            np.testing.assert_allclose(values, measures[name], err_msg=name)
    with pytest.raises(ValueError, match="Expected grayscale images"):
        digit_style.as_gray(np.zeros((2, 28, 28, 3), np.uint8))
