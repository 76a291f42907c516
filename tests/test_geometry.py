"""Rotations in the authors' pose convention (abc_tf.geometry): Euler angles to matrices and back
with their TensorFlow twin, the Pascal3D+ conversion against the toolbox's projection, and the
geodesic error (docs/PAPERS.md section 5)."""

import numpy as np
import pytest
import tensorflow as tf

from abc_tf import geometry
from rotation_helpers import random_euler, rot_x, rot_y, rot_z


# ----------------------------------------------------------------------------- conventions


def test_euler_matrix_euler_round_trip_and_tf_twin():
    euler = random_euler(np.random.default_rng(0), 500)
    rotations = geometry.euler_to_matrix(euler)
    assert rotations.shape == (500, 3, 3)
    np.testing.assert_allclose(
        rotations @ np.swapaxes(rotations, 1, 2), np.broadcast_to(np.eye(3), (500, 3, 3)), atol=1e-12
    )
    np.testing.assert_allclose(np.linalg.det(rotations), 1.0, atol=1e-12)
    np.testing.assert_allclose(geometry.matrix_to_euler(rotations), euler, atol=1e-9)
    np.testing.assert_allclose(geometry.euler_to_matrix_tf(tf.constant(euler)).numpy(), rotations, atol=1e-12)
    # Batch shapes pass through.
    assert geometry.euler_to_matrix(euler.reshape(5, 100, 3)).shape == (5, 100, 3, 3)


def test_matrix_is_the_authors_product_of_elementary_rotations():
    a, e, t = 0.3, 0.2, -0.4
    want = rot_z(-t) @ rot_x(e - np.pi / 2) @ rot_z(-a)
    np.testing.assert_allclose(geometry.euler_to_matrix([a, e, t]), want, atol=1e-12)


def test_zero_pose_looks_along_world_y_with_z_up():
    rotation = geometry.euler_to_matrix([0.0, 0.0, 0.0])
    np.testing.assert_allclose(rotation @ [0, 0, 1], [0, 1, 0], atol=1e-12)  # world up -> image up
    np.testing.assert_allclose(rotation @ [0, 1, 0], [0, 0, -1], atol=1e-12)  # away from camera -> -z


def pascal3d_toolbox_projection(point, azimuth_deg, elevation_deg, theta_deg, distance=5.0, focal=1.0):
    """Pascal3D+ project_3d.m step by step (before its pixel offset and y flip): 2-D point, y up."""
    a, e, theta = np.deg2rad([azimuth_deg, elevation_deg, theta_deg])
    center = distance * np.array([np.cos(e) * np.sin(a), -np.cos(e) * np.cos(a), np.sin(e)])
    a, e = -a, -(np.pi / 2 - e)
    rotation = rot_x(e) @ rot_z(a)
    projection = np.diag([focal, focal, -1.0]) @ np.hstack([rotation, -(rotation @ center)[:, None]])
    x = projection @ np.append(point, 1.0)
    x = x[:2] / x[2]
    return np.array([[np.cos(theta), -np.sin(theta)], [np.sin(theta), np.cos(theta)]]) @ x


def project_with_matrix(point, rotation, center, focal=1.0):
    camera = rotation @ (np.asarray(point) - center)
    return focal * camera[:2] / -camera[2]


@pytest.mark.parametrize(
    "azimuth, elevation, theta", [(0, 0, 0), (90, 0, 0), (30, 20, 15), (250, 45, -40), (180, -10, 170)]
)
def test_pascal3d_conversion_reproduces_the_toolbox_projection(azimuth, elevation, theta):
    rotation = geometry.pascal3d_to_matrix(azimuth, elevation, theta)
    a, e = np.deg2rad([azimuth, elevation])
    center = 5.0 * np.array([np.cos(e) * np.sin(a), -np.cos(e) * np.cos(a), np.sin(e)])
    # The camera's optical axis (-z) points from the camera centre to the origin.
    np.testing.assert_allclose(rotation.T @ [0, 0, -1], -center / 5.0, atol=1e-12)
    for point in np.random.default_rng(1).normal(0, 0.5, (5, 3)):
        np.testing.assert_allclose(
            project_with_matrix(point, rotation, center),
            pascal3d_toolbox_projection(point, azimuth, elevation, theta),
            atol=1e-9,
        )


def test_pascal3d_worked_examples():
    # Azimuth 90: the camera sits on world +x looking back at the origin, z up; world +y is to
    # the image's right, world +z up.
    rotation = geometry.pascal3d_to_matrix(90, 0, 0)
    np.testing.assert_allclose(rotation @ [0, 1, 0], [1, 0, 0], atol=1e-12)
    np.testing.assert_allclose(rotation @ [0, 0, 1], [0, 1, 0], atol=1e-12)
    # theta = 90 turns the image counter-clockwise (y up): image right becomes image up.
    rotation = geometry.pascal3d_to_matrix(90, 0, 90)
    np.testing.assert_allclose(rotation @ [0, 1, 0], [0, 1, 0], atol=1e-12)
    # Same azimuth and elevation, opposite tilt in the authors' convention.
    np.testing.assert_allclose(geometry.pascal3d_to_euler(90, 10, 30), np.deg2rad([90, 10, -30]))
    # The conventions differ by the tilt-dependent factor Rz(theta + t) = Rz(2 theta) for t = theta.
    authors_same_numbers = geometry.euler_to_matrix(np.deg2rad([40, 20, 25]))
    np.testing.assert_allclose(
        geometry.pascal3d_to_matrix(40, 20, 25), rot_z(np.deg2rad(50)) @ authors_same_numbers, atol=1e-12
    )


# ----------------------------------------------------------------------------- errors


def test_geodesic_error_known_angles():
    identity = np.eye(3)
    assert geometry.geodesic_error(identity, identity) == 0.0
    for rot in (rot_x, rot_y, rot_z):
        np.testing.assert_allclose(geometry.geodesic_error(identity, rot(np.pi / 2)), 90.0, atol=1e-9)
        np.testing.assert_allclose(geometry.geodesic_error(identity, rot(np.pi)), 180.0, atol=1e-9)
        np.testing.assert_allclose(
            geometry.geodesic_error(rot(0.1), rot(0.1 + np.deg2rad(30))), 30.0, atol=1e-9
        )
    # An azimuth change of d degrees is a rotation by d degrees (no sqrt(2) factor).
    base = random_euler(np.random.default_rng(2), 20)
    shifted = base + [np.deg2rad(25), 0, 0]
    np.testing.assert_allclose(
        geometry.geodesic_error(geometry.euler_to_matrix(base), geometry.euler_to_matrix(shifted)),
        25.0,
        atol=1e-9,
    )


def test_geodesic_error_equals_the_arccos_formula_and_is_symmetric():
    rng = np.random.default_rng(3)
    first, second = (
        geometry.euler_to_matrix(random_euler(rng, 300)),
        geometry.euler_to_matrix(random_euler(rng, 300)),
    )
    trace = np.trace(np.swapaxes(first, 1, 2) @ second, axis1=1, axis2=2)
    want = np.rad2deg(np.arccos(np.clip((trace - 1) / 2, -1, 1)))
    # float64: a few roundings of eps64 through arccos, whose condition 1 / sin(angle) stays far
    # below 1e6 for 300 random pairs, so far below 1e-6 degrees.
    np.testing.assert_allclose(geometry.geodesic_error(first, second), want, atol=1e-6)
    np.testing.assert_allclose(geometry.geodesic_error(second, first), want, atol=1e-6)
    assert np.all(geometry.geodesic_error(first, first) == 0)
