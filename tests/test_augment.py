"""How the pipelines apply augmentations (abc_tf.data.augment): ``--data.augmentations`` specs, double
augmentation, and the S5 pose recipe pose_augment."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from abc_tf.data import augment
from augment_helpers import background_case, face_stack, smooth_stack
from tolerance_helpers import rounding_rtol

SEED = tf.constant([3, 9], tf.int64)
SETS_SEED = tf.constant([3, 7], tf.int64)


def test_spec_parsing_and_amplitude_ranges():
    assert augment.parse_augmentations("") == ()
    assert augment.parse_augmentations(" contrast:0.3, crop:0.2 ") == (("contrast", 0.3), ("crop", 0.2))
    for spec, message in [
        ("blur:0.1", "unknown augmentation 'blur'"),
        ("crop", "needs an amplitude"),
        ("crop:big", "not a number"),
        ("crop:0.1,crop:0.2", "twice"),
    ]:
        with pytest.raises(ValueError, match=message):
            augment.parse_augmentations(spec)
    with pytest.raises(ValueError, match="crop amplitude"):
        augment.validate_augmentations(augment.parse_augmentations("crop:1.0"))


def test_double_augment_gives_independent_views():
    batch = {
        "set_a": tf.cast(face_stack() * 255, tf.uint8),
        "set_b": tf.cast(face_stack() * 255, tf.uint8),
        "other": tf.constant(1),
    }
    spec = augment.parse_augmentations("contrast:0.3,saturation:0.3,crop:0.2")
    out = augment.double_augment(batch, spec, SETS_SEED)
    assert sorted(out) == ["other", "set_a", "set_a_view2", "set_b", "set_b_view2"]
    assert out["set_a"].dtype == tf.float32
    assert not np.allclose(out["set_a"].numpy(), out["set_a_view2"].numpy())
    assert not np.allclose(out["set_a"].numpy(), out["set_b"].numpy())  # same pixels, other draws
    single = augment.double_augment(batch, spec, SETS_SEED, double=False)
    assert "set_a_view2" not in single
    # Inside a graph (as in tf.data) it gives the same result.
    graph = tf.function(lambda b: augment.double_augment(b, spec, SETS_SEED))(batch)
    # The graph may regroup the ops' float32 sums (contrast's mean of 10 x 12 pixels, the HSV
    # conversions, the crop's bilinear taps): about 130 roundings of values in [0, 1].
    np.testing.assert_allclose(
        graph["set_b_view2"].numpy(), out["set_b_view2"].numpy(), atol=rounding_rtol(130)
    )


def test_pose_augment_identity_and_real_images_unpainted():
    rgb, alpha, pool = background_case()
    rgba = np.concatenate([rgb, alpha], -1)
    is_real = np.array([[False, True, False], [True, False, False]])
    # No translation, no colour changes, no backgrounds: RGB comes back unchanged.
    out = augment.pose_augment(rgba, is_real, None, 0.0, 0.0, SEED).numpy()
    np.testing.assert_array_equal(out, rgb)
    # Painting changes renders outside their mask; photos have alpha 1 and are left alone.
    photos = rgba.copy()
    photos[is_real, ..., 3] = 1.0
    out = augment.pose_augment(photos, is_real, pool, 0.0, 0.0, SEED).numpy()
    np.testing.assert_array_equal(out[is_real], photos[is_real][..., :3])
    assert not np.allclose(out[~is_real], photos[~is_real][..., :3])
    # Full augmentation: shape and range.
    out = augment.pose_augment(photos, is_real, pool, 0.1, 1.0, SEED).numpy()
    assert out.shape == rgb.shape and 0.0 <= out.min() and out.max() <= 1.0


def test_spec_strings_accept_the_pose_augmentations():
    pairs = augment.parse_augmentations(
        "translate:0.1,brightness:0.2,sobel:0.3,gaussian_noise:0.02,salt_pepper:0.01"
    )
    augment.validate_augmentations(pairs)
    out = augment.augment_stack(smooth_stack(), pairs, SEED)
    assert out.shape == smooth_stack().shape
    with pytest.raises(ValueError, match="translate"):
        augment.validate_augmentations([("translate", 1.5)])
