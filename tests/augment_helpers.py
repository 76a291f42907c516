"""Image stacks the augmentation tests share: seeded random and smooth [P, S, H, W, C] stacks,
and renders with a mask over a pool of backgrounds."""

from __future__ import annotations

import numpy as np
import tensorflow as tf


def face_stack(channels: int = 3, low: float = 0.0, high: float = 1.0) -> tf.Tensor:
    """Random images [P=2, S=3, 10, 12, C] in [low, high]."""
    return tf.random.stateless_uniform([2, 3, 10, 12, channels], seed=[1, 2], minval=low, maxval=high)


def smooth_stack(channels: int = 3) -> tf.Tensor:
    """Smooth random images [P=2, S=3, 12, 12, C] in [0.1, 0.9] (edges for Sobel to find)."""
    coarse = tf.random.stateless_uniform([6, 4, 4, channels], seed=[1, 2], minval=0.1, maxval=0.9)
    return tf.reshape(tf.image.resize(coarse, [12, 12], method="bilinear"), [2, 3, 12, 12, channels])


def background_case() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Renders [2, 3, 10, 10, 3] (premultiplied) with a square mask; a pool of 5 backgrounds."""
    rng = np.random.default_rng(0)
    alpha = np.zeros((2, 3, 10, 10, 1), np.float32)
    alpha[:, :, 3:7, 2:8] = 1.0
    alpha[:, :, 2, 2:8] = 0.5  # a soft edge row
    rgb = rng.uniform(0.2, 0.8, (2, 3, 10, 10, 3)).astype(np.float32) * alpha
    pool = rng.integers(0, 256, (5, 24, 20, 3), dtype=np.uint8)
    return rgb, alpha, pool
