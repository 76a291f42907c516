"""What the information measures share: checked inputs and the noise that sets their scale.

A deterministic network's embeddings carry all information about their input. So every measure
(histogram MI, MINE, probes) looks at the embeddings plus Gaussian noise N(0, sigma^2) per coordinate.
The noise removes the information held on scales below sigma. This module holds:

- :func:`as_embeddings`, :func:`as_factors`: the [N, D] and [N, F] inputs, checked;
- :func:`add_noise`, :func:`spread`, :func:`sigma_grid`: the noise, the embeddings' own scale
  and a sweep's log-spaced noise scales;
- :func:`float32_policy`: builds the estimators' networks in float32 whatever the Keras policy.
"""

from __future__ import annotations

import contextlib
import math
from typing import Iterator

import keras
import numpy as np

# Noise scales of the paper's sweeps (supplement S1).
PAPER_NUM_SIGMAS = 40


@contextlib.contextmanager
def float32_policy() -> Iterator[None]:
    """Builds layers in float32 whatever the global Keras policy.

    Training an encoder under mixed precision sets a process-wide bfloat16 or float16 policy.
    The estimators must not inherit it: MINE's exp and logsumexp of T and the probes' softmax need float32.
    """
    previous = keras.mixed_precision.global_policy()
    keras.mixed_precision.set_global_policy("float32")
    try:
        yield
    finally:
        keras.mixed_precision.set_global_policy(previous)


def as_embeddings(embeddings: np.ndarray) -> np.ndarray:
    """Embeddings [N] or [N, D] as float64 [N, D]; raises unless N >= 2 and all are finite."""
    array = np.asarray(embeddings, dtype=np.float64)
    if array.ndim == 1:
        array = array[:, None]
    if array.ndim != 2 or array.shape[0] < 2:
        raise ValueError(f"Embeddings must have shape [N, D] with N >= 2, got {np.shape(embeddings)}.")
    if not np.all(np.isfinite(array)):
        raise ValueError("Embeddings contain NaN or infinite values.")
    return array


def as_factors(factors: np.ndarray, num_points: int) -> tuple[np.ndarray, bool]:
    """Returns factors as [N, F] and whether the input was a single factor [N]."""
    array = np.asarray(factors)
    single = array.ndim == 1
    if single:
        array = array[:, None]
    if array.ndim != 2 or array.shape[0] != num_points:
        raise ValueError(
            f"Factors must have shape [N] or [N, F] with N = {num_points} (the number of embeddings), "
            f"got {np.shape(factors)}."
        )
    if array.shape[1] == 0:
        raise ValueError("Factors must have at least one column.")
    return array, single


def add_noise(embeddings: np.ndarray, sigma: float, rng: np.random.Generator) -> np.ndarray:
    """embeddings [N, D] + N(0, sigma^2) noise per coordinate; sigma = 0 returns a copy."""
    if sigma < 0:
        raise ValueError(f"Noise sigma must be >= 0, got {sigma}.")
    embeddings = np.asarray(embeddings, dtype=np.float64)
    if sigma == 0:
        return embeddings.copy()
    return embeddings + rng.normal(scale=sigma, size=embeddings.shape)


def spread(embeddings: np.ndarray) -> float:
    """RMS distance of embeddings [N, D] from their mean, per coordinate: sqrt(mean_d var_d).

    In embedding units: the scale to read a noise sigma against.
    """
    return float(np.sqrt(np.mean(np.var(np.asarray(embeddings, dtype=np.float64), axis=0))))


def sigma_grid(
    embeddings: np.ndarray,
    length_scale: float,
    num: int = PAPER_NUM_SIGMAS,
    below: float = 100.0,
    above: float = 10.0,
) -> np.ndarray:
    """Log-spaced noise scales [num] for a sweep.

    From min(length scale, spread) / ``below`` to max(length scale, spread) * ``above``, with
    spread from :func:`spread`. Both the length scale and the embeddings' own extent are inside.
    """
    embeddings = as_embeddings(embeddings)
    if num < 2:
        raise ValueError(f"A sigma sweep needs num >= 2 values, got {num}.")
    if not length_scale > 0:
        raise ValueError(f"length_scale must be positive, got {length_scale}.")
    scale = max(spread(embeddings), 1e-6)
    low = min(length_scale, scale) / below
    high = max(length_scale, scale) * above
    return np.logspace(math.log10(low), math.log10(high), num)
