"""Pascal3D+-style test lists (abc_tf.data.pose.pascal3d): boxes cut from images written here, angles
in the authors' convention, errors naming the line."""

from __future__ import annotations

import numpy as np
import pytest

from abc_tf.data.pose import pascal3d
from abc_tf.geometry import euler_to_matrix
from pose_data_helpers import write_list_case


def test_pascal3d_list_gives_crops_and_angles(tmp_path):
    list_path = write_list_case(tmp_path)
    images, rotations, euler = pascal3d.read_pose_list(str(list_path), None, 16)
    green = images[0].astype(int)
    # Every pixel of the crop, edges included, is the green block up to JPEG error; a box one
    # pixel off would pull a black row or column into the edge pixels (green well below 170).
    assert np.all(green[..., 1] > 170) and np.all(green[..., [0, 2]] < 60)
    assert np.all(np.abs(images[1].astype(int) - 200) < 4)
    np.testing.assert_allclose(euler[0], np.deg2rad([30.0, 10.0, -5.0]))  # Pascal3D+ tilt flips sign
    np.testing.assert_allclose(rotations, euler_to_matrix(euler))


def test_pascal3d_list_errors_name_the_line(tmp_path):
    list_path = tmp_path / "bad.txt"
    list_path.write_text("missing.jpg 1 1 5 5 0 0 0\n")
    with pytest.raises(ValueError, match="line 1.*does not exist"):
        pascal3d.read_pose_list(str(list_path), None, 8)
    list_path.write_text("a.jpg 1 1 5\n")
    with pytest.raises(ValueError, match="line 1: expected"):
        pascal3d.read_pose_list(str(list_path), None, 8)
