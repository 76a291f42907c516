"""Pascal3D+-style test lists: real images of known pose (the pose family's ``--data.pose_test_list``).

One object per line, ``image left top right bottom azimuth elevation tilt``: a box in 1-based
inclusive pixels and angles in degrees in the Pascal3D+ convention, turned into the authors'
convention by :func:`abc_tf.geometry.pascal3d_to_euler`.
"""

from __future__ import annotations

import os

import numpy as np

from abc_tf.data.folders.image_files import read_image, resize_images
from abc_tf.geometry import euler_to_matrix, pascal3d_to_euler


def read_pose_list(
    list_path: str, image_dir: str | None, image_size: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Reads a Pascal3D+-style test list: one object per line,
    ``image left top right bottom azimuth elevation tilt`` (box in 1-based inclusive pixels,
    angles in degrees, Pascal3D+ convention; '#' starts a comment).

    Each box is cut from its image (``image_dir``/image; default: the list's folder), clipped
    to the image, and resized to ``image_size`` (stretched). Returns (uint8 [N, S, S, 3],
    rotations float64 [N, 3, 3], Euler angles float64 [N, 3] in radians, authors'
    convention via :func:`abc_tf.geometry.pascal3d_to_euler`).
    """
    if not os.path.isfile(list_path):
        raise ValueError(f"--data.pose_test_list {list_path} does not exist.")
    image_dir = image_dir or os.path.dirname(os.path.abspath(list_path))
    crops, angles = [], []
    decoded: dict[str, np.ndarray] = {}
    with open(list_path) as handle:
        lines = handle.read().splitlines()
    for number, line in enumerate(lines, start=1):
        text = line.split("#", 1)[0].strip()
        if not text:
            continue
        fields = text.split()
        where = f"{list_path}, line {number}"
        if len(fields) != 8:
            raise ValueError(
                f"{where}: expected 'image left top right bottom azimuth elevation tilt', got {len(fields)} "
                "fields."
            )
        try:
            left, top, right, bottom, azimuth, elevation, tilt = (float(v) for v in fields[1:])
        except ValueError:
            raise ValueError(f"{where}: the box and angles must be numbers, got {fields[1:]}.") from None
        path = os.path.join(image_dir, fields[0])
        if path not in decoded:
            if not os.path.isfile(path):
                raise ValueError(f"{where}: image {path} does not exist (--data.pose_test_images).")
            decoded[path] = read_image(path, 3)
        image = decoded[path]
        height, width = image.shape[:2]
        # 1-based inclusive -> 0-based half-open, clipped to the image.
        y0, y1 = max(0, int(round(top)) - 1), min(height, int(round(bottom)))
        x0, x1 = max(0, int(round(left)) - 1), min(width, int(round(right)))
        if y1 <= y0 or x1 <= x0:
            raise ValueError(
                f"{where}: the box ({left}, {top}, {right}, {bottom}) is empty inside the {width}x{height} "
                "image."
            )
        crops.append(image[y0:y1, x0:x1])
        angles.append((azimuth, elevation, tilt))
    if not crops:
        raise ValueError(f"--data.pose_test_list {list_path} names no objects.")
    angles_arr = np.array(angles)
    euler = pascal3d_to_euler(angles_arr[:, 0], angles_arr[:, 1], angles_arr[:, 2])
    return resize_images(crops, image_size), euler_to_matrix(euler), euler
