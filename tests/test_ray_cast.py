"""The ray caster (abc_tf.data.pose.ray_cast): exact projected boxes, and renders that follow the
authors' rotation convention."""

from __future__ import annotations

import numpy as np

from abc_tf.data.pose import domains as pose_domains
from abc_tf.data.pose import ray_cast
from abc_tf.data.pose.objects import _Parts, stack_instances
from abc_tf.geometry import euler_to_matrix


def test_projected_boxes_of_a_box_and_a_cylinder():
    parts = _Parts()
    parts.box((0.0, 0.0, 0.0), (2.0, 0.5, 0.25), (1, 0, 0))
    box = stack_instances([parts.build()])
    parts = _Parts()
    parts.cylinder((0.0, 0.0, 0.0), 2, 0.5, 0.3, (1, 0, 0))  # along z: half length 0.5, radius 0.3
    cylinder = stack_instances([parts.build()])
    side = euler_to_matrix(np.array([[0.0, 0.0, 0.0]]))  # camera on -y: image x = object x, up = z
    np.testing.assert_allclose(ray_cast.projected_boxes(box, side)[0], [-2.0, 2.0, -0.25, 0.25], atol=1e-9)
    np.testing.assert_allclose(ray_cast.projected_boxes(cylinder, side)[0], [-0.3, 0.3, -0.5, 0.5], atol=1e-9)
    front = euler_to_matrix(np.array([[np.pi / 2, 0.0, 0.0]]))  # camera on +x
    np.testing.assert_allclose(ray_cast.projected_boxes(box, front)[0], [-0.5, 0.5, -0.25, 0.25], atol=1e-9)
    top = euler_to_matrix(np.array([[0.0, np.pi / 2, 0.0]]))  # looking down: a disc
    np.testing.assert_allclose(ray_cast.projected_boxes(cylinder, top)[0], [-0.3, 0.3, -0.3, 0.3], atol=1e-9)


def test_render_follows_the_rotation_convention():
    """A red box at x < 0 and a blue box at x > 0: seen from -y (azimuth 0) red is on the left,
    from +y (azimuth pi) on the right; a cylinder seen from above fills pi/4 of its box."""
    parts = _Parts()
    parts.box((-1.0, 0.0, 0.0), (1.0, 0.5, 0.5), (1.0, 0.0, 0.0))
    parts.box((1.0, 0.0, 0.0), (1.0, 0.5, 0.5), (0.0, 0.0, 1.0))
    two = parts.build()
    cyl_parts = _Parts()
    cyl_parts.cylinder((0.0, 0.0, 0.0), 2, 0.5, 1.0, (0.0, 1.0, 0.0))
    objects = stack_instances([two, two, cyl_parts.build()])
    euler = np.array([[0.0, 0.0, 0.0], [np.pi, 0.0, 0.0], [0.0, np.pi / 2, 0.0]])
    rgb, alpha, rotations = ray_cast.render(objects, euler, 16, pose_domains.synthetic_lighting(3))
    np.testing.assert_allclose(rotations, euler_to_matrix(euler))
    assert np.all(alpha[:2] == 1.0)  # the tight box is filled by the two boxes
    left, right = rgb[:, :, :8].mean(axis=(1, 2)), rgb[:, :, 8:].mean(axis=(1, 2))
    assert left[0, 0] > 0.2 and left[0, 2] == 0 and right[0, 2] > 0.2 and right[0, 0] == 0
    assert left[1, 2] > 0.2 and left[1, 0] == 0 and right[1, 0] > 0.2 and right[1, 2] == 0
    assert abs(alpha[2].mean() - np.pi / 4) < 0.03
    assert alpha[2][8, 8] == 1.0 and alpha[2][0, 0] == 0.0
