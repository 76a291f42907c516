"""BetaVAE and FactorVAE scores: disentanglement scores that draw their own observations.

Both need observations in which one factor is held fixed, so they take a :class:`FactorSource`: the
two-step generator disentanglement_lib uses (``sample_factors``, then the codes of observations of those
factors). The scores edit the drawn factors themselves, so one source serves every score and method.
Settings follow disentanglement_lib's ``beta_vae_sklearn.gin`` and ``factor_vae_metric.gin``.
"""

from __future__ import annotations

import dataclasses
from typing import Callable, Protocol, Sequence

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from abc_tf.evaluation.estimators.disentanglement_arrays import (
    Seed,
    check_codes,
    check_factors,
    rng_of,
    sklearn_seed,
)


class FactorSource(Protocol):
    """Observations of a data family with known factors, seen through one representation.

    ``factor_names``: the k factor names.
    ``sample_factors(n, rng)`` -> int [n, k]: n independent draws of the factors from the data
    distribution, e.g. uniform over the Shapes3D grid.
    ``codes(factors, rng)`` -> float [n, d]: the codes of observations with exactly these factor values,
    one row per row of ``factors``. It renders or looks up the images and runs the encoder.
    """

    factor_names: Sequence[str]

    def sample_factors(self, n: int, rng: np.random.Generator) -> np.ndarray: ...

    def codes(self, factors: np.ndarray, rng: np.random.Generator) -> np.ndarray: ...


@dataclasses.dataclass(frozen=True)
class GridSource:
    """A :class:`FactorSource` on a full factor grid with uniform independent factors.

    factor_sizes: number of values of each factor. Factors are drawn as indices ``0 .. size - 1``.
    encode: factor indices int [n, k] -> codes [n, d], e.g. by rendering the images of those
      grid points and running an encoder.
    names: the factors' names, the ``factor_names`` property. Default ``factor_0, ...``.
    """

    factor_sizes: Sequence[int]
    encode: Callable[[np.ndarray], np.ndarray]
    names: Sequence[str] | None = None

    def __post_init__(self) -> None:
        if not self.factor_sizes or any(int(s) < 1 for s in self.factor_sizes):
            raise ValueError(f"factor_sizes must be positive integers, got {list(self.factor_sizes)}.")
        if self.names is not None and len(self.names) != len(self.factor_sizes):
            raise ValueError(f"{len(self.names)} names for {len(self.factor_sizes)} factors.")

    @property
    def factor_names(self) -> tuple[str, ...]:
        if self.names is None:
            return tuple(f"factor_{i}" for i in range(len(self.factor_sizes)))
        return tuple(self.names)

    def sample_factors(self, n: int, rng: np.random.Generator) -> np.ndarray:
        return np.stack([rng.integers(0, int(s), size=n) for s in self.factor_sizes], axis=1)

    def codes(self, factors: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        del rng
        return np.asarray(self.encode(factors))


# ----------------------------------------------------------------------------------------------
# Sampling


def _source_codes(source: FactorSource, factors: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    codes = check_codes(source.codes(factors, rng), "source.codes(...)", factors.shape[0])
    return codes


def _num_factors(source: FactorSource) -> int:
    k = len(source.factor_names)
    if k < 1:
        raise ValueError("The source has no factors.")
    return k


def _sample_factors(source: FactorSource, n: int, k: int, rng: np.random.Generator) -> np.ndarray:
    factors = np.asarray(source.sample_factors(n, rng))
    if factors.shape != (n, k):
        raise ValueError(f"source.sample_factors({n}) returned shape {factors.shape}, expected {(n, k)}.")
    return check_factors(factors, n, "source.sample_factors(...)")


def draw(
    source: FactorSource, n: int, seed: Seed = None, chunk_size: int = 4096
) -> tuple[np.ndarray, np.ndarray]:
    """Codes float [n, d] and factors int [n, k] of n random observations of ``source``."""
    rng = rng_of(seed)
    k = _num_factors(source)
    factors = _sample_factors(source, n, k, rng)
    parts = [_source_codes(source, factors[i : i + chunk_size], rng) for i in range(0, n, chunk_size)]
    return np.concatenate(parts, axis=0), factors


def _blocks(num_points: int, codes_per_point: int, chunk_size: int):
    """(start, count) blocks of points with about chunk_size codes each."""
    per_block = max(1, chunk_size // codes_per_point)
    for start in range(0, num_points, per_block):
        yield start, min(per_block, num_points - start)


# ----------------------------------------------------------------------------------------------
# BetaVAE


def beta_vae_points(
    source: FactorSource, num_points: int, batch_size: int, seed: Seed = None, chunk_size: int = 4096
) -> tuple[np.ndarray, np.ndarray]:
    """BetaVAE's points: features float [num_points, d], labels int [num_points].

    Each point draws a random factor y and two batches of ``batch_size`` factor draws. Row i of both
    batches agrees in factor y. The feature is the batch mean of |codes(batch 1) - codes(batch 2)|.
    """
    rng = rng_of(seed)
    k = _num_factors(source)
    features, labels = [], []
    for _, p in _blocks(num_points, 2 * batch_size, chunk_size):
        index = rng.integers(0, k, size=p)
        first = _sample_factors(source, p * batch_size, k, rng).reshape(p, batch_size, k)
        second = _sample_factors(source, p * batch_size, k, rng).reshape(p, batch_size, k)
        rows = np.arange(p)
        second[rows, :, index] = first[rows, :, index]
        both = np.concatenate([first, second], axis=0).reshape(2 * p * batch_size, k)
        codes = _source_codes(source, both, rng).reshape(2, p, batch_size, -1)
        features.append(np.mean(np.abs(codes[0] - codes[1]), axis=1))
        labels.append(index)
    return np.concatenate(features, axis=0), np.concatenate(labels, axis=0)


def beta_vae_score(
    source: FactorSource,
    *,
    batch_size: int = 64,
    num_train: int = 10_000,
    num_eval: int = 5_000,
    standardize: bool = True,
    seed: Seed = None,
    chunk_size: int = 4096,
) -> dict[str, float]:
    """BetaVAE score: accuracy of a logistic regression that names the fixed factor.

    Defaults are disentanglement_lib's: 10,000 training and 5,000 evaluation points from 64 pairs each.
    Differences, both deliberate:

    - ``standardize=True`` standardises the regression's inputs. It is L2-regularised with a fixed C,
      so without this the score changes when a code is merely rescaled.
    - The regression runs up to 1,000 lbfgs iterations. scikit-learn's default of 100 stops short on
      well-separated points.

    Returns ``train_accuracy`` and ``eval_accuracy``, the score. Chance is 1 / k.
    """
    rng = rng_of(seed)
    train_x, train_y = beta_vae_points(source, num_train, batch_size, rng, chunk_size)
    model = LogisticRegression(max_iter=1000, random_state=sklearn_seed(rng))
    if standardize:
        model = make_pipeline(StandardScaler(), model)
    if np.unique(train_y).size < 2:
        raise ValueError("BetaVAE needs training points of at least two factors (raise num_train).")
    model.fit(train_x, train_y)
    eval_x, eval_y = beta_vae_points(source, num_eval, batch_size, rng, chunk_size)
    return {
        "train_accuracy": float(model.score(train_x, train_y)),
        "eval_accuracy": float(model.score(eval_x, eval_y)),
    }


# ----------------------------------------------------------------------------------------------
# FactorVAE


def factor_vae_votes(
    source: FactorSource,
    num_points: int,
    batch_size: int,
    global_variances: np.ndarray,
    active: np.ndarray,
    seed: Seed = None,
    chunk_size: int = 4096,
) -> np.ndarray:
    """FactorVAE's votes int [k, d]: points with factor y fixed whose active dimension of least variance,
    relative to ``global_variances``, was j."""
    rng = rng_of(seed)
    k = _num_factors(source)
    active_dims = np.flatnonzero(active)
    votes = np.zeros((k, global_variances.shape[0]), dtype=np.int64)
    for _, p in _blocks(num_points, batch_size, chunk_size):
        index = rng.integers(0, k, size=p)
        factors = _sample_factors(source, p * batch_size, k, rng).reshape(p, batch_size, k)
        rows = np.arange(p)
        factors[rows, :, index] = factors[rows, 0, index][:, None]
        codes = _source_codes(source, factors.reshape(p * batch_size, k), rng).reshape(p, batch_size, -1)
        local = np.var(codes[:, :, active_dims], axis=1, ddof=1)
        chosen = active_dims[np.argmin(local / global_variances[active_dims], axis=1)]
        np.add.at(votes, (index, chosen), 1)
    return votes


def majority_vote_accuracy(train_votes: np.ndarray, eval_votes: np.ndarray | None = None) -> float:
    """Accuracy of FactorVAE's majority-vote classifier.

    Each dimension predicts the factor that voted for it most in ``train_votes`` [k, d]; ties go to the first.
    Scored on ``eval_votes``; default: the training votes themselves.
    """
    train_votes = np.asarray(train_votes)
    votes = train_votes if eval_votes is None else np.asarray(eval_votes)
    if votes.shape != train_votes.shape or votes.ndim != 2:
        raise ValueError(
            f"Vote matrices must be [k, d] of one shape, got {train_votes.shape} and {votes.shape}."
        )
    total = votes.sum()
    if total == 0:
        return 0.0
    predicted = np.argmax(train_votes, axis=0)
    return float(votes[predicted, np.arange(votes.shape[1])].sum() / total)


def code_spread(variances: np.ndarray) -> float:
    """The spread of codes whose dimensions have these variances [d]: the RMS of the per-dimension stds."""
    return float(np.sqrt(np.mean(variances)))


def factor_vae_score(
    source: FactorSource,
    *,
    batch_size: int = 64,
    num_train: int = 10_000,
    num_eval: int = 5_000,
    num_variance_estimate: int = 10_000,
    prune_threshold: float = 0.05,
    prune_relative: bool = True,
    variance_codes: np.ndarray | None = None,
    seed: Seed = None,
    chunk_size: int = 4096,
) -> dict[str, float]:
    """FactorVAE score: accuracy of the majority-vote classifier on fixed-factor batches.

    Global variances (``ddof=1``) come from ``variance_codes`` [m, d], codes of random observations.
    Default: ``num_variance_estimate`` codes drawn from the source. A dimension is active when its std
    is at least ``prune_threshold``. Each training and evaluation point is a batch of ``batch_size``
    observations with one random factor fixed at one random value. It votes for (that factor, the
    active dimension of least variance relative to its global variance). Defaults are disentanglement_lib's.

    Differences, all deliberate:

    - ``prune_relative=True`` measures the std in units of the codes' spread (:func:`code_spread`).
      The library's 0.05 on the raw std assumes codes of unit scale, as a VAE's prior gives them.
      On raw codes it prunes every dimension of small codes (PMP's spread is 0.05, ABC's 0.44-1.8), so the
      score would partly compare scales. ``prune_relative=False`` is the library's absolute threshold.
    - A dimension of exactly zero variance is never active. The library divides by it when the threshold is 0.
    - ``num_active_dims`` counts the active dimensions. The library reports the length of its mask.

    Returns ``train_accuracy``, ``eval_accuracy`` (the score; chance 1 / k) and ``num_active_dims``.
    With no active dimension both accuracies are 0, as in disentanglement_lib.
    """
    if batch_size < 2:
        raise ValueError(f"FactorVAE needs batches of at least 2 (a variance), got {batch_size}.")
    rng = rng_of(seed)
    if variance_codes is None:
        variance_codes, _ = draw(source, num_variance_estimate, rng, chunk_size)
    variance_codes = check_codes(variance_codes, "variance_codes")
    if variance_codes.shape[0] < 2:
        raise ValueError("The global variances need at least 2 codes.")
    global_variances = np.var(variance_codes, axis=0, ddof=1)
    std = np.sqrt(global_variances)
    spread = code_spread(global_variances)
    if prune_relative and spread > 0:
        std = std / spread
    active = (std >= prune_threshold) & (global_variances > 0)
    if not active.any():
        return {"train_accuracy": 0.0, "eval_accuracy": 0.0, "num_active_dims": 0}
    train_votes = factor_vae_votes(source, num_train, batch_size, global_variances, active, rng, chunk_size)
    eval_votes = factor_vae_votes(source, num_eval, batch_size, global_variances, active, rng, chunk_size)
    return {
        "train_accuracy": majority_vote_accuracy(train_votes),
        "eval_accuracy": majority_vote_accuracy(train_votes, eval_votes),
        "num_active_dims": int(active.sum()),
    }
