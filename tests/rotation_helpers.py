"""Rotations the pose tests build by hand: random Euler angles in the authors' convention
(azimuth, elevation, tilt) and the elementary rotations about x, y and z."""

from __future__ import annotations

import numpy as np


def random_euler(rng: np.random.Generator, count: int, max_elevation: float = 1.5) -> np.ndarray:
    """[count, 3]: azimuth in [0, 2 pi), elevation in [-max_elevation, max_elevation], tilt in [-pi, pi)."""
    return np.stack(
        [
            rng.uniform(0, 2 * np.pi, count),
            rng.uniform(-max_elevation, max_elevation, count),
            rng.uniform(-np.pi, np.pi, count),
        ],
        axis=-1,
    )


def rot_x(angle):
    c, s = np.cos(angle), np.sin(angle)
    return np.array([[1, 0, 0], [0, c, -s], [0, s, c]])


def rot_y(angle):
    c, s = np.cos(angle), np.sin(angle)
    return np.array([[c, 0, s], [0, 1, 0], [-s, 0, c]])


def rot_z(angle):
    c, s = np.cos(angle), np.sin(angle)
    return np.array([[c, -s, 0], [s, c, 0], [0, 0, 1]])
