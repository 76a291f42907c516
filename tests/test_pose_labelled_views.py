"""abc_tf.data.pose.labelled_views: images of known pose from KeypointNet files, Pascal3D+-style lists
and procedural renders."""

from __future__ import annotations

import numpy as np
import pytest

from abc_tf.data.pose import labelled_views, pascal3d
from abc_tf.data.pose import procedural as pose_procedural
from abc_tf.geometry import euler_to_matrix
from pose_data_helpers import SMALL, write_list_case, write_split_folder
from test_pose import config


def test_labelled_images_from_keypointnet_and_a_pascal3d_list(tmp_path):
    write_split_folder(tmp_path)
    cfg = config(source="keypointnet", path=str(tmp_path), real_fraction=0.0)
    images, rotations, euler = labelled_views.labelled_images(cfg, "test", "synthetic")
    assert images.shape == (2, 16, 16, 3) and rotations.shape == (2, 3, 3)
    # Angles from the record's float32 modelview (6e-8 an entry, through atan2 and asin); the
    # rotations are euler_to_matrix of those very angles (float64).
    np.testing.assert_allclose(euler[:, 0], [0.0, 1.0], atol=1e-5)
    np.testing.assert_allclose(rotations, euler_to_matrix(euler), atol=1e-9)
    # Labelled real images are the crops of the Pascal3D+-style list.
    list_path = write_list_case(tmp_path)
    with pytest.raises(ValueError, match="pose_test_list"):
        labelled_views.labelled_images(cfg, "test", "real")
    cfg = cfg.replace(pose_test_list=str(list_path))
    images, _, euler = labelled_views.labelled_images(cfg, "test", "real")
    expected_images, _, expected_euler = pascal3d.read_pose_list(str(list_path), None, 16)
    np.testing.assert_array_equal(images, expected_images)
    np.testing.assert_allclose(euler, expected_euler)
    # Fewer than the list holds: a seeded subset, in list order.
    subset, _, subset_euler = labelled_views.labelled_images(cfg, "test", "real", num_images=1, seed=3)
    assert subset.shape == (1, 16, 16, 3) and any(np.allclose(subset_euler[0], e) for e in expected_euler)


def test_labelled_images_procedural(monkeypatch):
    monkeypatch.setattr(pose_procedural, "PROCEDURAL", SMALL)
    cfg = config()
    images, rotations, euler = labelled_views.labelled_images(cfg, "test", "real", 4, seed=1)
    assert images.shape == (4, 16, 16, 3) and images.dtype == np.uint8
    np.testing.assert_allclose(rotations, euler_to_matrix(euler))
    assert np.all(euler[:, 1] <= 0.5 + 1e-9)
    again, _, euler_again = labelled_views.labelled_images(cfg, "test", "real", 4, seed=1)
    np.testing.assert_array_equal(images, again)
    np.testing.assert_array_equal(euler, euler_again)
    synthetic, _, _ = labelled_views.labelled_images(cfg, "train", "synthetic", seed=0)
    assert synthetic.shape == (SMALL.dictionary_images, 16, 16, 3)
    with pytest.raises(ValueError, match="domain"):
        labelled_views.labelled_images(cfg, "test", "photo")
