"""Shapes3D files written by the tests: 3dshapes.h5 in the real layout (labels in the file's
order, images that carry their own factor indices), independently of the library."""

from __future__ import annotations

import h5py
import numpy as np

from abc_tf.data.shapes3d import sources

# The real label values of 3dshapes.h5, written here independently of the library.
REAL_VALUES = [
    np.arange(10) / 10,
    np.arange(10) / 10,
    np.arange(10) / 10,
    np.linspace(0.75, 1.25, 8),
    np.arange(4.0),
    np.linspace(-30, 30, 15),
]


def real_layout_labels() -> np.ndarray:
    """labels (480000, 6) float64 in the 3dshapes order: floor, wall, object hue, scale, shape,
    orientation."""
    grids = np.meshgrid(*REAL_VALUES, indexing="ij")  # last factor fastest, like the file
    return np.stack([g.ravel() for g in grids], axis=1)


def code_image(factors: np.ndarray) -> np.ndarray:
    """An image that carries its six factor indices in its first row (red channel, +1)."""
    image = np.zeros((64, 64, 3), dtype=np.uint8)
    image[0, :6, 0] = np.asarray(factors) + 1
    return image


def decode_image(images: np.ndarray) -> np.ndarray:
    return images[..., 0, :6, 0].astype(np.int64) - 1


def write_h5(path, labels=None, num=480000, coded_rows=()):
    """A 3dshapes.h5 in the real layout. Images are chunked and compressed, so the unwritten
    (zero) ones cost nothing on disk; ``coded_rows`` get images that carry their labels."""
    labels = real_layout_labels() if labels is None else labels
    with h5py.File(path, "w") as handle:
        images = handle.create_dataset(
            "images", shape=(num, 64, 64, 3), dtype=np.uint8, chunks=(1, 64, 64, 3), compression="gzip"
        )
        handle.create_dataset("labels", data=labels)
        if len(coded_rows):
            indices = sources.labels_to_indices(labels[np.asarray(coded_rows)], "test")
            for row, factors in zip(coded_rows, indices):
                images[row] = code_image(factors)
    return path
