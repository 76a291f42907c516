"""Style measures of digit images from their ink: slant, stroke thickness, ink, width.

They use image moments only, no network. So the data layer can label digits by style. The MNIST
family's known factors bin them, and the MNIST style evaluation predicts them from embeddings.
"""

from __future__ import annotations

import numpy as np


def as_gray(images: np.ndarray) -> np.ndarray:
    """[N, H, W] or [N, H, W, 1] -> float64 [N, H, W] ink in [0, 1]. uint8 is divided by 255."""
    images = np.asarray(images)
    if images.ndim == 4 and images.shape[-1] == 1:
        images = images[..., 0]
    if images.ndim != 3:
        raise ValueError(f"Expected grayscale images [N, H, W] or [N, H, W, 1], got shape {images.shape}.")
    return images.astype(np.float64) / (255.0 if images.dtype == np.uint8 else 1.0)


def _moments(images: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Ink mass [N] and central second moments [N] in px^2: mu20 (x x), mu11 (x y), mu02 (y y)."""
    ink = as_gray(images)
    height, width = ink.shape[1:]
    y, x = np.mgrid[0:height, 0:width].astype(np.float64)
    mass = ink.sum(axis=(1, 2))
    safe = np.maximum(mass, 1e-12)
    mean_x = (ink * x).sum(axis=(1, 2)) / safe
    mean_y = (ink * y).sum(axis=(1, 2)) / safe
    dx = x[None] - mean_x[:, None, None]
    dy = y[None] - mean_y[:, None, None]
    mu20 = (ink * dx * dx).sum(axis=(1, 2)) / safe
    mu11 = (ink * dx * dy).sum(axis=(1, 2)) / safe
    mu02 = (ink * dy * dy).sum(axis=(1, 2)) / safe
    return mass, mu20, mu11, mu02


def slant(images: np.ndarray) -> np.ndarray:
    """Slant of each image [N] from second-order image moments: -mu11 / mu02.

    It is the shear that deskewing would undo, in pixels of x per pixel of height. A digit whose
    top leans right is positive; rows grow downwards, hence the minus. A blank image has slant 0.
    """
    mass, _, mu11, mu02 = _moments(images)
    return np.where(mass > 0, -mu11 / np.maximum(mu02, 1e-12), 0.0)


def stroke_thickness(images: np.ndarray) -> np.ndarray:
    """Mean stroke width of each image [N] in pixels: ink area over half the perimeter.

    A stroke of length L and width w has area L w and perimeter about 2 L, so w = 2 A / P. Both
    come from the gray levels without thresholding. A is the sum of ink in [0, 1]. By the coarea
    formula, P is the total variation sum |grad ink|: the perimeter averaged over all thresholds.
    Forward differences on the zero-padded image count both edges of a one-pixel line.
    Short strokes read slightly thinner, since their ends add to P. A stroke too thin to reach
    full ink reads as its blurred width. A blank image reads 0.
    """
    ink = np.pad(as_gray(images), ((0, 0), (1, 1), (1, 1)))
    grad_y = np.diff(ink, axis=1)[:, :, :-1]
    grad_x = np.diff(ink, axis=2)[:, :-1, :]
    perimeter = np.hypot(grad_x, grad_y).sum(axis=(1, 2))
    area = ink.sum(axis=(1, 2))
    return np.where(perimeter > 0, 2.0 * area / np.maximum(perimeter, 1e-12), 0.0)


def style_measures(images: np.ndarray) -> dict[str, np.ndarray]:
    """The style measures of every image, name -> [N]. Slant in px/px, thickness in px, ink in px^2."""
    mass, mu20, _, _ = _moments(images)
    return {
        "slant": slant(images),
        "thickness": stroke_thickness(images),
        # Total ink and horizontal spread: style too, but partly set by the digit's shape.
        "ink": mass,
        "width": np.sqrt(mu20),
    }
