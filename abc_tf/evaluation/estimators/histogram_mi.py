"""Histogram estimate of the mutual information between embeddings and factors, in nats.

For low-dimensional embeddings; the ICLR text (appendix B) uses d = 2.
``I(U; G) = H(U) - sum_g p(g) H(U | G = g)``, from one histogram of about sqrt(N) bins in all.
Every conditional uses the same bins. The noise of scale sigma that every measure adds is added
before histogramming. :func:`histogram_sigma_sweep` repeats the estimate over a grid of sigmas.
For higher dimensions use MINE (``abc_tf.evaluation.estimators.mine``).
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from abc_tf.evaluation.estimators.noise import add_noise, as_embeddings, as_factors


def entropy_from_counts(counts: np.ndarray, miller_madow: bool = False) -> float:
    """Plug-in entropy in nats of a histogram, given its counts of any shape.

    miller_madow adds (occupied bins - 1) / (2 n), the first-order correction of the plug-in bias.
    """
    counts = np.asarray(counts, dtype=np.float64).ravel()
    total = counts.sum()
    if total <= 0:
        raise ValueError("Cannot take the entropy of an empty histogram.")
    occupied = counts[counts > 0]
    p = occupied / total
    entropy = float(-np.sum(p * np.log(p)))
    if miller_madow:
        entropy += (occupied.size - 1) / (2.0 * total)
    return entropy


def histogram_edges(embeddings: np.ndarray, total_bins: int | None = None) -> list[np.ndarray]:
    """Equal-width bin edges per dimension of embeddings [N, D], about ``total_bins`` bins in all.

    Each dimension gets round(total_bins ** (1/D)) bins, at least 2, spanning its observed range.
    The D-dimensional grid then holds about total_bins cells; the default is sqrt(N).
    """
    embeddings = as_embeddings(embeddings)
    num_points, dims = embeddings.shape
    if total_bins is None:
        total_bins = int(round(math.sqrt(num_points)))
    if total_bins < 2:
        raise ValueError(f"total_bins must be >= 2, got {total_bins}.")
    per_axis = max(2, int(round(total_bins ** (1.0 / dims))))
    edges = []
    for column in embeddings.T:
        low, high = float(column.min()), float(column.max())
        if high - low < 1e-12:  # a constant coordinate: one wide bin pair around it
            low, high = low - 0.5, high + 0.5
        edges.append(np.linspace(low, high, per_axis + 1))
    return edges


def _bin_index(embeddings: np.ndarray, edges: Sequence[np.ndarray]) -> np.ndarray:
    """Flat cell index [N] of every point in the grid given by ``edges``."""
    flat = np.zeros(embeddings.shape[0], dtype=np.int64)
    for column, edge in zip(embeddings.T, edges):
        bins = len(edge) - 1
        # Interior edges only: values at or beyond the ends fall in the first/last bin.
        index = np.clip(np.searchsorted(edge[1:-1], column, side="right"), 0, bins - 1)
        flat = flat * bins + index
    return flat


def histogram_mutual_information(
    embeddings: np.ndarray,
    factors: np.ndarray,
    total_bins: int | None = None,
    miller_madow: bool = False,
) -> np.ndarray | float:
    """I(U; G) in nats from a histogram of the embeddings (ICLR text, appendix B).

    Args:
      embeddings: [N, D]. Meant for D = 2; D up to 3 is practical.
      factors: [N] or [N, F] discrete factor values; each distinct value is one class.
        Discretise continuous variables first, e.g. with :func:`quantile_bins`.
      total_bins: cells of the histogram in all; default sqrt(N).
      miller_madow: apply the Miller-Madow bias correction to every entropy.

    Returns:
      ``H(U) - sum_g p(g) H(U | G = g)``, every conditional on the same bins.
      A float for a single factor [N], else an array [F].
    """
    embeddings = as_embeddings(embeddings)
    factors, single = as_factors(factors, embeddings.shape[0])
    if embeddings.shape[1] > 3:
        raise ValueError(
            "Histogram MI needs low-dimensional embeddings (D <= 3), "
            f"got D = {embeddings.shape[1]}; use MINE."
        )
    edges = histogram_edges(embeddings, total_bins)
    cells = _bin_index(embeddings, edges)
    num_cells = int(np.prod([len(edge) - 1 for edge in edges]))
    marginal_entropy = entropy_from_counts(np.bincount(cells, minlength=num_cells), miller_madow)
    result = np.empty(factors.shape[1])
    for column in range(factors.shape[1]):
        _, classes = np.unique(factors[:, column], return_inverse=True)
        classes = classes.ravel()
        # Joint counts [classes, cells] by one bincount over the combined index.
        joint = np.bincount(classes * num_cells + cells, minlength=(classes.max() + 1) * num_cells)
        joint = joint.reshape(-1, num_cells)
        class_counts = joint.sum(axis=1)
        conditional = sum(
            (count / len(cells)) * entropy_from_counts(row, miller_madow)
            for row, count in zip(joint, class_counts)
            if count > 0
        )
        result[column] = marginal_entropy - conditional
    return float(result[0]) if single else result


def quantile_bins(values: np.ndarray, num_bins: int) -> np.ndarray:
    """Discretises a continuous variable [N] into ``num_bins`` equally populated classes [N]."""
    values = np.asarray(values, dtype=np.float64).ravel()
    if num_bins < 2:
        raise ValueError(f"num_bins must be >= 2, got {num_bins}.")
    inner = np.quantile(values, np.linspace(0, 1, num_bins + 1)[1:-1])
    return np.searchsorted(inner, values, side="right")


def histogram_sigma_sweep(
    embeddings: np.ndarray,
    factors: np.ndarray,
    sigmas: Sequence[float],
    seed: int = 0,
    total_bins: int | None = None,
    repeats: int = 1,
) -> np.ndarray:
    """Histogram MI [S, F] of embeddings plus N(0, sigma^2) noise, for each of S sigmas.

    ``repeats`` noisy copies of the embeddings, with their factors, are stacked before histogramming.
    That samples the noise more densely.
    """
    embeddings = as_embeddings(embeddings)
    factors, _ = as_factors(factors, embeddings.shape[0])
    if repeats < 1:
        raise ValueError(f"repeats must be >= 1, got {repeats}.")
    rng = np.random.default_rng(seed)
    stacked_embeddings = np.concatenate([embeddings] * repeats)
    stacked_factors = np.concatenate([factors] * repeats)
    return np.stack(
        [
            histogram_mutual_information(
                add_noise(stacked_embeddings, float(s), rng), stacked_factors, total_bins
            )
            for s in sigmas
        ]
    )
