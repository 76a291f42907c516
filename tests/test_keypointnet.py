"""KeypointNet tfrecords (abc_tf.data.pose.keypointnet): records written here from hand-made views and
modelview matrices, the rotation convention, the elevation filter, the splits."""

from __future__ import annotations

import os

import numpy as np
import pytest

from abc_tf.data.pose import keypointnet
from abc_tf.geometry import euler_to_matrix, matrix_to_euler
from pose_data_helpers import modelview_for, render_view, write_record, write_split_folder


@pytest.mark.slow
def test_keypointnet_record_round_trips_to_crop_and_rotation(tmp_path):
    euler0, euler1 = np.array([0.7, 0.3, 0.0]), np.array([4.0, 0.1, 0.0])
    img0, img1 = render_view((5, 13, 8, 16)), render_view((2, 30, 10, 26))  # 8 x 8 (no resize) and 28 x 16
    write_record(str(tmp_path / "abc123.tfrecord"), [(img0, euler0, img1, euler1)])
    images, euler, instances, names = keypointnet.read_keypointnet(
        [str(tmp_path / "abc123.tfrecord")], 8, 0.5
    )
    assert images.shape == (2, 8, 8, 4) and images.dtype == np.uint8
    assert names == ["abc123"] and instances.tolist() == [0, 0]
    # The record holds the modelview in float32 (6e-8 of each entry), which atan2 and asin carry
    # to the angles about unchanged away from the poles (elevations 0.3 and 0.1 here): 1e-5 is 100x.
    np.testing.assert_allclose(euler, np.stack([euler0, euler1]), atol=1e-5)
    np.testing.assert_allclose(euler_to_matrix(euler), euler_to_matrix(np.stack([euler0, euler1])), atol=1e-5)
    # The tight crop fills the frame: opaque everywhere, red on the left half, blue on the right
    # (exactly for the 8 x 8 box; the resized box mixes the two middle columns).
    assert np.all(images[..., 3] == 255)
    np.testing.assert_array_equal(images[0, :, :4, :3], np.broadcast_to([255, 0, 0], (8, 4, 3)))
    np.testing.assert_array_equal(images[0, :, 4:, :3], np.broadcast_to([0, 0, 255], (8, 4, 3)))
    np.testing.assert_array_equal(images[1, :, :3, :3], np.broadcast_to([255, 0, 0], (8, 3, 3)))
    np.testing.assert_array_equal(images[1, :, 5:, :3], np.broadcast_to([0, 0, 255], (8, 3, 3)))


def test_rotation_from_hand_written_modelviews():
    # KeypointNet's format: p_camera = M p_object, M = reshape(mv, [4, 4]); the camera looks
    # along its -z axis with y up, so the rows of M's rotation block are the camera's x (right),
    # y (up) and z (toward the camera) axes in ShapeNet object coordinates (y up). Expected
    # angles are those of the authors' convention: azimuth 0 sees the object from its -y side
    # (ShapeNet +z), azimuth grows counter-clockwise seen from above, elevation > 0 looks down.
    e = 0.3
    cases = [
        # Camera on ShapeNet +z, level: azimuth 0, elevation 0.
        ([[1, 0, 0], [0, 1, 0], [0, 0, 1]], [0.0, 0.0, 0.0]),
        # Raised by e: the camera's z axis (0, sin e, cos e), its up axis (0, cos e, -sin e).
        ([[1, 0, 0], [0, np.cos(e), -np.sin(e)], [0, np.sin(e), np.cos(e)]], [0.0, e, 0.0]),
        # Camera on ShapeNet +x (the authors' +x: a quarter turn counter-clockwise), level.
        ([[0, 0, -1], [0, 1, 0], [1, 0, 0]], [np.pi / 2, 0.0, 0.0]),
        # On the +x side and raised by e: z axis (cos e, sin e, 0), up axis (-sin e, cos e, 0).
        ([[0, 0, -1], [-np.sin(e), np.cos(e), 0], [np.cos(e), np.sin(e), 0]], [np.pi / 2, e, 0.0]),
    ]
    for block, expected in cases:
        modelview = np.eye(4)
        modelview[:3, :3] = block
        modelview[:3, 3] = (0.0, 0.0, -2.5)  # the camera distance plays no part
        rotation = keypointnet.rotation_from_modelview(modelview.reshape(16))
        np.testing.assert_allclose(matrix_to_euler(rotation), expected, atol=1e-9)
        np.testing.assert_allclose(rotation, euler_to_matrix(np.array(expected)), atol=1e-9)


def test_rotation_from_modelview_orthonormalises_and_turns_y_up_to_z_up():
    euler = np.array([[1.0, 0.4, 0.05], [5.5, 1.2, -0.1]])
    modelviews = np.stack([modelview_for(e) for e in euler]).astype(np.float64)
    modelviews[:, :11] *= 2.0  # a uniform scale in the rotation block (and junk in row 3)
    rotation = keypointnet.rotation_from_modelview(modelviews)
    # modelview_for stores float32 entries (6e-8 of 1); the orthonormalisation in float64 keeps that size.
    np.testing.assert_allclose(rotation, euler_to_matrix(euler), atol=1e-6)
    # ShapeNet's up (+y) is the authors' up (+z): elevation reads the modelview's y column.
    np.testing.assert_allclose(matrix_to_euler(rotation)[:, 1], euler[:, 1], atol=1e-6)


@pytest.mark.slow
def test_elevation_filter_and_grouping_by_instance(tmp_path):
    low, high = np.array([1.0, 0.3, 0.0]), np.array([2.0, 0.8, 0.0])
    view = render_view((4, 20, 4, 20))
    write_record(str(tmp_path / "car_b.tfrecord"), [(view, low, view, high)])
    write_record(str(tmp_path / "car_a.tfrecord"), [(view, high, view, high), (view, low, view, low)])
    files = keypointnet.keypointnet_files(str(tmp_path), "train")
    assert [os.path.basename(f) for f in files] == ["car_a.tfrecord", "car_b.tfrecord"]
    _, euler, instances, names = keypointnet.read_keypointnet(files, 8, 0.5)  # cars: 0.5 rad
    assert names == ["car_a", "car_b"] and instances.tolist() == [0, 0, 1]
    assert np.all(euler[:, 1] <= 0.5)
    _, euler, instances, _ = keypointnet.read_keypointnet(files, 8, 1.3)  # chairs: 1.3 rad keep everything
    assert len(euler) == 6 and instances.tolist() == [0, 0, 0, 0, 1, 1]


def test_keypointnet_splits_follow_test_txt(tmp_path):
    write_split_folder(tmp_path)
    assert [os.path.basename(f) for f in keypointnet.keypointnet_files(str(tmp_path), "train")] == [
        "m1.tfrecord"
    ]
    assert [os.path.basename(f) for f in keypointnet.keypointnet_files(str(tmp_path), "test")] == [
        "m2.tfrecord"
    ]
    with pytest.raises(ValueError, match="neither a .tfrecord file nor a folder"):
        keypointnet.keypointnet_files(str(tmp_path / "missing"), "train")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="no .tfrecord files"):
        keypointnet.keypointnet_files(str(tmp_path / "empty"), "train")
