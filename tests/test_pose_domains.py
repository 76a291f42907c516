"""The two image domains of procedural pose data (abc_tf.data.pose.domains): transparent
synthetic renders, "real" photos with clutter, both pure functions of their seeds."""

from __future__ import annotations

import numpy as np

from abc_tf.data.pose import domains as pose_domains
from abc_tf.geometry import euler_to_matrix

EULER = np.array([[0.3, 0.2, 0.0], [2.0, 0.4, 0.0], [4.0, 0.1, 0.05]])


def test_synthetic_renders_are_premultiplied_rgba_on_transparency():
    rgba, rotations = pose_domains.render_synthetic("car", "train", np.array([0, 1, 1]), EULER, 16)
    assert rgba.shape == (3, 16, 16, 4) and rgba.dtype == np.uint8
    np.testing.assert_allclose(rotations, euler_to_matrix(EULER))
    alpha = rgba[..., 3]
    assert np.all(rgba[..., :3][alpha == 0] == 0) and alpha.max() == 255 and alpha.min() == 0
    again, _ = pose_domains.render_synthetic("car", "train", np.array([0, 1, 1]), EULER, 16)
    np.testing.assert_array_equal(again, rgba)


def test_real_photos_are_opaque_and_seeded():
    photos, _ = pose_domains.render_real("car", "test", np.array([0, 0, 1]), EULER, 16, seed=4)
    assert photos.shape == (3, 16, 16, 3) and photos.dtype == np.uint8
    np.testing.assert_array_equal(
        pose_domains.render_real("car", "test", np.array([0, 0, 1]), EULER, 16, seed=4)[0], photos
    )
    assert not np.array_equal(
        pose_domains.render_real("car", "test", np.array([0, 0, 1]), EULER, 16, seed=5)[0], photos
    )
    # Clutter behind the object: the corners are not black as on a synthetic render.
    assert photos[:, [0, -1]][:, :, [0, -1]].max() > 0


def test_clutter_backgrounds_and_uint8_conversion():
    scenes = pose_domains.clutter_backgrounds(np.random.default_rng(0), 4, 12)
    assert scenes.shape == (4, 12, 12, 3) and 0.0 <= scenes.min() and scenes.max() <= 1.0
    np.testing.assert_array_equal(
        pose_domains.to_uint8(np.array([-0.1, 0.0, 0.5, 1.0, 1.2])), [0, 0, 128, 255, 255]
    )
