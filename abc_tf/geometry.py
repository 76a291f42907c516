"""Rotations in the authors' pose convention, in NumPy and TensorFlow; pure maths (docs/PAPERS.md section 5).

Euler angles are ``[..., 3]`` arrays ``(azimuth a, elevation e, tilt t)`` in **radians**.
The camera rotation, world to camera coordinates, is ``R = Rz(-t) Rx(e - pi/2) Rz(-a)``.
``Rz`` and ``Rx`` are the usual active rotations. World z points up. At ``a = e = t = 0`` the camera
looks along world +y, world z is camera +y (image up), and the camera looks along its own -z (OpenGL).

Pascal3D+ annotations are in degrees. The camera sits at ``d (cos e sin a, -cos e cos a, sin e)``.
The in-plane angle ``theta`` turns projected points counter-clockwise, image y up: that is ``Rz(theta)``.
So Pascal3D+ means ``R = Rz(theta) Rx(e - pi/2) Rz(-a)``: same azimuth and elevation, tilt ``t = -theta``.
Only :func:`pascal3d_to_euler` converts. Source: Pascal3D+ toolbox, project_3d.m.

Errors are geodesic angles on SO(3) in **degrees**: ``arccos((trace(R1^T R2) - 1) / 2)``, no sqrt(2).
The flip-invariant error is ``min(theta, 180 - theta)``.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import tensorflow as tf
from scipy.spatial.transform import Rotation


def as_euler_array(euler: np.ndarray | Sequence[float]) -> np.ndarray:
    euler = np.asarray(euler, dtype=np.float64)
    if euler.shape[-1:] != (3,):
        raise ValueError(
            f"Euler angles must have a last axis of 3 (azimuth, elevation, tilt), got shape {euler.shape}."
        )
    return euler


def as_matrices(rotations: np.ndarray) -> np.ndarray:
    rotations = np.asarray(rotations, dtype=np.float64)
    if rotations.shape[-2:] != (3, 3):
        raise ValueError(f"Rotation matrices must have shape [..., 3, 3], got {rotations.shape}.")
    return rotations


def euler_to_matrix(euler: np.ndarray | Sequence[float]) -> np.ndarray:
    """Authors' Euler angles [..., 3] (radians) -> rotation matrices [..., 3, 3] (float64).

    ``R = Rz(-t) Rx(e - pi/2) Rz(-a)``: scipy's extrinsic "zxz" sequence applies its first
    angle first, i.e. ``from_euler("zxz", [g1, g2, g3]) = Rz(g3) Rx(g2) Rz(g1)``.
    """
    euler = as_euler_array(euler)
    batch_shape = euler.shape[:-1]
    flat = euler.reshape(-1, 3)
    angles = np.stack([-flat[:, 0], flat[:, 1] - np.pi / 2, -flat[:, 2]], axis=-1)
    return Rotation.from_euler("zxz", angles).as_matrix().reshape(*batch_shape, 3, 3)


def matrix_to_euler(rotations: np.ndarray) -> np.ndarray:
    """Rotation matrices [..., 3, 3] -> authors' Euler angles [..., 3] in radians.

    Ranges: azimuth in [0, 2 pi), elevation in [-pi/2, pi/2] (the camera never looks from
    below the horizon upside down), tilt in [-pi, pi). At elevation +-pi/2 (a top or bottom
    view) azimuth and tilt are one degree of freedom; scipy then sets one of them and warns.
    """
    rotations = as_matrices(rotations)
    batch_shape = rotations.shape[:-2]
    g1, g2, g3 = Rotation.from_matrix(rotations.reshape(-1, 3, 3)).as_euler("zxz").T
    # scipy returns the middle angle g2 in [0, pi]; our g2 = e - pi/2 lies in [-pi, 0] for
    # e in [-pi/2, pi/2]. (g1 + pi, -g2, g3 + pi) is the same rotation with g2 in that range.
    azimuth = np.mod(-(g1 + np.pi), 2 * np.pi)
    elevation = np.pi / 2 - g2
    tilt = np.mod(-(g3 + np.pi) + np.pi, 2 * np.pi) - np.pi
    return np.stack([azimuth, elevation, tilt], axis=-1).reshape(*batch_shape, 3)


def pascal3d_to_euler(azimuth_deg, elevation_deg, theta_deg) -> np.ndarray:
    """Pascal3D+ viewpoint (degrees) -> authors' Euler angles [..., 3] in radians.

    Azimuth and elevation are the same angles; the in-plane rotation has the opposite sign
    (see the module docstring for the derivation from the Pascal3D+ toolbox). The toolbox rotates
    the world by ``Rx(-(pi/2 - e)) Rz(-a)``, then the projected points by ``R2d(theta)``. That
    differs from the authors' matrix by the tilt-dependent factor ``Rz(theta + t)``.
    """
    azimuth, elevation, theta = np.broadcast_arrays(
        np.asarray(azimuth_deg, np.float64),
        np.asarray(elevation_deg, np.float64),
        np.asarray(theta_deg, np.float64),
    )
    return np.deg2rad(np.stack([azimuth, elevation, -theta], axis=-1))


def pascal3d_to_matrix(azimuth_deg, elevation_deg, theta_deg) -> np.ndarray:
    """Pascal3D+ viewpoint (degrees) -> camera rotation [..., 3, 3], ``Rz(theta) Rx(e - pi/2) Rz(-a)``."""
    return euler_to_matrix(pascal3d_to_euler(azimuth_deg, elevation_deg, theta_deg))


def euler_to_matrix_tf(euler: tf.Tensor) -> tf.Tensor:
    """TensorFlow twin of :func:`euler_to_matrix` for graphs (SavedModels): [..., 3] -> [..., 3, 3].

    Written with plain ops so that an exported model needs neither scipy nor project code.
    """
    euler = tf.convert_to_tensor(euler)
    azimuth, elevation, tilt = tf.unstack(euler, axis=-1)
    zero = tf.zeros_like(azimuth)
    one = tf.ones_like(azimuth)

    def rot_z(angle: tf.Tensor) -> tf.Tensor:
        c, s = tf.cos(angle), tf.sin(angle)
        return tf.stack(
            [tf.stack([c, -s, zero], -1), tf.stack([s, c, zero], -1), tf.stack([zero, zero, one], -1)], -2
        )

    def rot_x(angle: tf.Tensor) -> tf.Tensor:
        c, s = tf.cos(angle), tf.sin(angle)
        return tf.stack(
            [tf.stack([one, zero, zero], -1), tf.stack([zero, c, -s], -1), tf.stack([zero, s, c], -1)], -2
        )

    return rot_z(-tilt) @ rot_x(elevation - np.pi / 2) @ rot_z(-azimuth)


def geodesic_error(rotations_a: np.ndarray, rotations_b: np.ndarray) -> np.ndarray:
    """Geodesic angle between rotations [..., 3, 3] and [..., 3, 3] -> [...] in degrees, in [0, 180].

    The angle ``arccos((trace(Ra^T Rb) - 1) / 2)`` (no sqrt(2) factor), computed in float64 as
    ``atan2(sin, cos)`` with ``cos = (trace(M) - 1) / 2`` and ``sin = |vee(M - M^T)| / 2`` for
    ``M = Ra^T Rb``: the same angle, but arccos loses half the digits next to 0 degrees (an
    exact match would read 3e-6 degrees) and needs its argument clipped to [-1, 1] against
    rounding, while atan2 is exact at 0 and well defined everywhere.
    """
    rotations_a, rotations_b = as_matrices(rotations_a), as_matrices(rotations_b)
    relative = np.swapaxes(rotations_a, -1, -2) @ rotations_b
    cos = (np.trace(relative, axis1=-2, axis2=-1) - 1.0) / 2.0
    skew = relative - np.swapaxes(relative, -1, -2)
    sin = 0.5 * np.sqrt(skew[..., 2, 1] ** 2 + skew[..., 0, 2] ** 2 + skew[..., 1, 0] ** 2)
    return np.rad2deg(np.arctan2(sin, cos))
