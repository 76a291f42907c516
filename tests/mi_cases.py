"""Data of known mutual information, shared by the tests of the estimators."""

from __future__ import annotations

import math

import numpy as np

RHO = 0.8
GAUSSIAN_MI = -0.5 * math.log(1 - RHO**2)  # 0.511 nats


def correlated_gaussians(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=n)
    y = RHO * x + math.sqrt(1 - RHO**2) * rng.normal(size=n)
    return x, y


def separated_clusters(n: int, k: int, seed: int = 0, spread: float = 0.02) -> tuple[np.ndarray, np.ndarray]:
    """2-D points around k well-separated centres; labels [n] uniform over k values."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, k, n)
    angles = 2 * np.pi * np.arange(k) / k
    centres = np.stack([np.cos(angles), np.sin(angles)], axis=1)
    return centres[labels] + spread * rng.normal(size=(n, 2)), labels
