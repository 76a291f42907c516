"""The pose family's built-in data (abc_tf.data.pose.procedural), at small sizes: training renders
grouped by instance, unlabelled "real" photos, backgrounds, images of known pose."""

from __future__ import annotations

import numpy as np

from abc_tf.data.pose import procedural as pose_procedural
from abc_tf.geometry import euler_to_matrix
from pose_data_helpers import SMALL


def test_training_images_are_grouped_by_instance(monkeypatch):
    monkeypatch.setattr(pose_procedural, "PROCEDURAL", SMALL)
    synthetic, euler, instances, names, real = pose_procedural.training_images("car", 16, 0.5)
    assert synthetic.shape == (18, 16, 16, 4) and synthetic.dtype == np.uint8
    assert euler.shape == (18, 3) and euler.dtype == np.float32 and np.all(euler[:, 1] <= 0.5)
    np.testing.assert_array_equal(instances, np.repeat(np.arange(3), 6))
    assert names == ["car_0000", "car_0001", "car_0002"]
    assert real.shape == (4, 16, 16, 3) and real.dtype == np.uint8
    # Premultiplied RGBA: no colour where the render is transparent.
    assert np.all(synthetic[..., :3][synthetic[..., 3] == 0] == 0)
    again = pose_procedural.training_images("car", 16, 0.5)
    np.testing.assert_array_equal(again[0], synthetic)


def test_builtin_backgrounds_are_cluttered_scenes(monkeypatch):
    monkeypatch.setattr(pose_procedural, "PROCEDURAL", SMALL)
    scenes = pose_procedural.backgrounds(16)
    assert scenes.shape == (SMALL.background_images, 16, 16, 3) and scenes.dtype == np.uint8
    assert scenes.std() > 10  # cluttered scenes, not a flat colour


def test_labelled_images_in_both_domains(monkeypatch):
    monkeypatch.setattr(pose_procedural, "PROCEDURAL", SMALL)
    rng = lambda: np.random.default_rng(5)  # noqa: E731
    images, rotations, euler = pose_procedural.labelled_images(
        "chair", "test", "synthetic", 3, 16, 1.3, rng()
    )
    assert images.shape == (3, 16, 16, 3) and np.all(euler[:, 2] == 0)  # synthetic: no tilt
    np.testing.assert_allclose(rotations, euler_to_matrix(euler))
    real, _, real_euler = pose_procedural.labelled_images("chair", "test", "real", 3, 16, 1.3, rng())
    assert not np.array_equal(real, images) and np.any(real_euler[:, 2] != 0)  # photos tilt a little
    again, _, _ = pose_procedural.labelled_images("chair", "test", "real", 3, 16, 1.3, rng())
    np.testing.assert_array_equal(again, real)
    default, _, _ = pose_procedural.labelled_images("chair", "train", "synthetic", None, 16, 1.3, rng())
    assert len(default) == SMALL.dictionary_images
