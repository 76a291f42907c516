"""Disentanglement scores of the field (PEERS.md section 4), as disentanglement_lib defines them.

BetaVAE score (Higgins et al. 2017), FactorVAE score (Kim and Mnih 2018), MIG (Chen et al.
2018), DCI disentanglement / completeness / informativeness (Eastwood and Williams 2018) and
SAP (Kumar et al. 2018), for any method's representation on any data family whose generative
factors are known. disentanglement_lib 1.5 does not import beside TensorFlow 2.21, so the
definitions are rebuilt here on NumPy and scikit-learn (no TensorFlow): scikit-learn provides
every learned part (logistic regression, linear SVMs, gradient-boosted trees, uniform binning,
discrete mutual information, Pearson correlation), this module only arranges the samples and
combines the results.

Interface
---------
Scores that read a representation off given observations take arrays:

- ``codes`` float [n, d]: the representation of n observations;
- ``factors`` int [n, k]: their factor values (any integers; one column per factor);
- ``factor_names``: optional names of the k factors (per-factor results are keyed by them).

:func:`mig` takes one such set; :func:`dci` and :func:`sap` take a training and a test set.

BetaVAE and FactorVAE must *draw* observations in which one factor is held fixed, so they take a
:class:`FactorSource`, the same two-step generator disentanglement_lib uses (its
``GroundTruthData.sample_factors`` followed by the representation of
``sample_observations_from_factors``):

- ``source.factor_names``: the k factor names;
- ``source.sample_factors(n, rng) -> int [n, k]``: n independent draws of the factors (from
  the data distribution, e.g. uniform over the Shapes3D grid);
- ``source.codes(factors, rng) -> float [n, d]``: the representation of observations that have
  exactly these factor values (render or look up the images, run the encoder).

The scores edit the drawn factors themselves (BetaVAE: a pair of batches that agree in one
factor row by row; FactorVAE: one batch with one factor set to a single value) and ask
``codes`` for the result, so one source serves every score and every method. ``codes`` is
called with at most ``ScoreSettings.chunk_size`` rows at a time (more only when one sample
needs more). :class:`GridSource` builds a source from factor sizes and an ``encode`` callable;
for Shapes3D, for example::

    source = GridSource(shapes3d.FACTOR_SIZES,
                        lambda f: embed(images_of(shapes3d.GRID.ravel(f))),
                        shapes3d.FACTOR_NAMES)
    results = all_scores(source, ScoreSettings(), seed=0)

:func:`draw` gives ``(codes, factors)`` of n random observations of a source, the input of the
array scores.

Settings (disentanglement_lib, ``config/unsupervised_study_v1/metric_configs/*.gin`` and the
metric modules)
-------------------------------------------------------------------------------------------
- BetaVAE (``beta_vae_sklearn.gin``): 10,000 training and 5,000 evaluation points; each point
  is the mean absolute difference of the codes of 64 pairs of observations that share the value
  of one random factor (a new value per pair), labelled with that factor; scikit-learn's
  ``LogisticRegression`` is trained on the training points; score = evaluation accuracy.
- FactorVAE (``factor_vae_metric.gin``): the global variance of every code dimension from
  10,000 observations (``ddof=1``); dimensions with std below 0.05 (``prune_dims.threshold``)
  count as collapsed and are left out; each of 10,000 training and 5,000 evaluation points is a
  batch of 64 observations with one random factor fixed at one random value, and votes for
  (that factor, the active dimension of least variance relative to its global variance);
  the majority-vote classifier maps each dimension to the factor that voted for it most in
  training; score = its accuracy on the evaluation votes.
- MIG (``mig.gin``): 10,000 observations; every code dimension discretised into 20 equal-width
  bins between its minimum and maximum (``histogram_discretizer``); discrete mutual
  information I(z_j; v_k) in nats; per factor the gap between the largest and the second
  largest over dimensions, divided by the factor's entropy H(v_k); score = the mean over factors.
- DCI (``dci.gin``): 10,000 training (ours: 5,000, see below) and 5,000 test observations; one
  ``GradientBoostingClassifier`` (scikit-learn defaults: 100 stages of depth-3 trees) per
  factor; importance matrix R [d, k] = |feature importances|; disentanglement = sum over
  dimensions of (1 - entropy of R's row, base k) weighted by the row's share of R; completeness
  = sum over factors of (1 - entropy of R's column, base d) weighted by the column's share;
  informativeness = mean accuracy of the classifiers on the test set (and on the training set).
- SAP (``sap_score.gin``): 10,000 training and 5,000 test observations,
  ``continuous_factors=False``: score matrix S [d, k] = test accuracy of a linear SVM
  (``LinearSVC(C=0.01, class_weight="balanced")``) that predicts factor k from code dimension
  j alone; with ``continuous_factors=True`` S is instead the squared Pearson correlation on the
  training set (0 for dimensions of variance <= 1e-12); score = the mean over factors of the
  gap between the top two entries of S's column. A one-vs-rest linear SVM on one dimension
  cannot single out the middle values of a factor, so with discrete factors even the identity
  code scores far below 1 (0.24 for factors of Shapes3D's sizes at the default counts); the
  library's own identity test, like ours, uses ``continuous_factors=True``.

Differences from disentanglement_lib, all deliberate:

- DCI's trees train on 5,000 points (``dci_num_train``), not 10,000: the trees cost time in
  proportion to the points, and at 10,000 they took about 105 s of a 108 s evaluation on the
  2 busy cores of "Cost". Fewer points let the trees overfit more, which spreads importance over more
  dimensions and lowers disentanglement and completeness a little: on the synthetic codes of
  "Cost" D / C / I(test) are 0.40 / 0.36 / 0.58 at 2,500 points, 0.46 / 0.41 / 0.62 at 5,000,
  0.51 / 0.47 / 0.65 at 10,000. Compare DCI values only between runs of one setting.
- ``standardize=True`` (default) standardises the inputs of the two scale-dependent
  classifiers: BetaVAE's logistic regression and SAP's 1-D SVMs (both L2-regularised with a
  fixed C, so without it the score of a representation changes when it is merely rescaled).
  Every score is then invariant to permuting, shifting, rescaling and flipping code
  dimensions (DCI up to small changes: scikit-learn's trees split float32 copies of the codes)
  except through FactorVAE's collapse threshold, which stays absolute (0.05 assumes codes of unit scale, as a
  VAE's prior has; pass codes of that scale or change ``factor_vae_prune_threshold``).
  ``ScoreSettings.disentanglement_lib()`` turns standardisation off and trains DCI's trees on
  10,000 points.
- BetaVAE's logistic regression runs up to 1,000 lbfgs iterations (scikit-learn's default
  100 stops short on well-separated points).
- FactorVAE: a dimension of exactly zero variance is never active (the library divides by it
  when the threshold is 0); ``num_active_dims`` counts the active dimensions (the library
  reports the length of its mask).
- Gradient-boosted trees and SVMs get seeds drawn from the caller's seed, so results repeat.
- In :func:`all_scores` MIG, DCI and SAP share one training set (and DCI and SAP one test
  set), and FactorVAE's variance estimate uses the same training codes, instead of drawing a
  fresh set for each score: the same statistics from 15,000 codes instead of 50,000.
- A factor that takes a single value in a training set is an error (MIG divides by its zero
  entropy, a classifier cannot be fitted); with a single factor or a single code dimension,
  DCI's entropies have base 1 and the per-dimension / per-factor terms are defined as 1.

Cost
----
DCI's gradient-boosted trees are nearly all of it: 100 stages of one depth-3 tree per factor
value (Shapes3D: 57 values, 5,700 trees), each sorting every code dimension at every node, so
their time grows with the training points (15-20 ms per tree on 10,000 x 10 points here).
The factors' classifiers run in parallel threads (``n_jobs``, largest factor first).
Measured with :func:`all_scores` on the 2 CPU cores of the build machine while other jobs kept
them busy (load average about 2; scikit-learn 1.9), synthetic codes d = 10 of k = 6 factors
with the Shapes3D sizes 10, 10, 10, 8, 4, 15, the time to compute the codes excluded:

- ``ScoreSettings()``: 32 s wall, 61 s CPU in all: DCI 30 s (5,000 training points), BetaVAE
  0.5 s, SAP 0.4 s, FactorVAE 0.2 s, MIG 0.1 s.
- ``ScoreSettings.disentanglement_lib()`` (DCI on 10,000 points): 108 s wall, 128 s CPU.

The encoder, not the metrics, is the expensive part of a real evaluation at the library's point
counts: ``ScoreSettings().codes_drawn()`` = 2,895,000 codes (BetaVAE 1,920,000, FactorVAE
960,000, the shared sets 15,000). To fit a budget of encoder calls, lower the sampler scores'
point counts, e.g. ``dataclasses.replace(settings, beta_vae_num_train=1000,
beta_vae_num_eval=500, factor_vae_num_train=1000, factor_vae_num_eval=500)`` (303,000 codes).
"""

from __future__ import annotations

import dataclasses
import warnings
from typing import Callable, Protocol, Sequence, Union

import joblib
import numpy as np
import scipy.stats
from sklearn import metrics as sk_metrics
from sklearn.ensemble import GradientBoostingClassifier
from sklearn.feature_selection import r_regression
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import KBinsDiscretizer, StandardScaler
from sklearn.svm import LinearSVC

SCORES: tuple[str, ...] = ("beta_vae", "factor_vae", "mig", "dci", "sap")

# Entropies of importance rows/columns get this added, as disentanglement_lib does, so that
# an all-zero row is the uniform distribution (entropy 1: it contributes nothing).
_IMPORTANCE_EPS = 1e-11
# SAP (continuous): dimensions of smaller variance score 0, as in disentanglement_lib.
_MIN_CODE_VARIANCE = 1e-12

# A seed for np.random.default_rng, or a generator to draw from (and advance).
Seed = Union[int, np.random.Generator, None]


class FactorSource(Protocol):
    """Observations of a data family with known factors, seen through one representation.

    ``sample_factors(n, rng)`` -> int [n, k]: independent draws of the k factors.
    ``codes(factors, rng)`` -> float [n, d]: the codes of observations with exactly these
    factor values (one row per row of ``factors``).
    """

    factor_names: Sequence[str]

    def sample_factors(self, n: int, rng: np.random.Generator) -> np.ndarray:
        ...

    def codes(self, factors: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        ...


@dataclasses.dataclass(frozen=True)
class GridSource:
    """A :class:`FactorSource` on a full factor grid with uniform independent factors.

    factor_sizes: number of values of each factor; factors are drawn as indices
      ``0 .. size - 1``.
    encode: factor indices int [n, k] -> codes [n, d] (e.g. render or look up the images of
      those grid points and run an encoder).
    names: the factors' names (the ``factor_names`` property); default ``factor_0, ...``.
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


@dataclasses.dataclass(frozen=True)
class ScoreSettings:
    """Point counts and options of :func:`all_scores`.

    The defaults are disentanglement_lib's (module docstring: each setting's origin), except
    ``dci_num_train`` and ``standardize`` (``disentanglement_lib()`` restores both).
    """

    # BetaVAE (beta_vae_sklearn.gin).
    beta_vae_batch_size: int = 64
    beta_vae_num_train: int = 10_000
    beta_vae_num_eval: int = 5_000
    # FactorVAE (factor_vae_metric.gin).
    factor_vae_batch_size: int = 64
    factor_vae_num_train: int = 10_000
    factor_vae_num_eval: int = 5_000
    factor_vae_num_variance_estimate: int = 10_000
    factor_vae_prune_threshold: float = 0.05
    # MIG, DCI and SAP share these sets (mig.gin, dci.gin, sap_score.gin: 10,000 / 5,000).
    num_train: int = 10_000
    num_test: int = 5_000
    mig_num_bins: int = 20
    # DCI trains on the first dci_num_train points of that set: half the library's 10,000,
    # which halves the cost of its trees (module docstring, "Cost").
    dci_num_train: int = 5_000
    sap_continuous_factors: bool = False
    # Deliberate differences (module docstring) and execution.
    standardize: bool = True
    n_jobs: int = -1
    chunk_size: int = 4096

    @classmethod
    def disentanglement_lib(cls) -> "ScoreSettings":
        """disentanglement_lib's settings where ours differ: no standardisation, DCI's trees
        on 10,000 points."""
        return cls(standardize=False, dci_num_train=10_000)

    def validate(self) -> None:
        at_least = {
            "beta_vae_batch_size": (self.beta_vae_batch_size, 1),
            "beta_vae_num_train": (self.beta_vae_num_train, 2),
            "beta_vae_num_eval": (self.beta_vae_num_eval, 1),
            "factor_vae_batch_size": (self.factor_vae_batch_size, 2),
            "factor_vae_num_train": (self.factor_vae_num_train, 1),
            "factor_vae_num_eval": (self.factor_vae_num_eval, 1),
            "factor_vae_num_variance_estimate": (self.factor_vae_num_variance_estimate, 2),
            "num_train": (self.num_train, 2),
            "dci_num_train": (self.dci_num_train, 2),
            "num_test": (self.num_test, 1),
            "mig_num_bins": (self.mig_num_bins, 2),
            "chunk_size": (self.chunk_size, 1),
        }
        for name, (value, minimum) in at_least.items():
            if int(value) != value or value < minimum:
                raise ValueError(f"{name} must be an integer >= {minimum}, got {value}.")
        if not self.factor_vae_prune_threshold >= 0:
            raise ValueError(f"factor_vae_prune_threshold must be >= 0, got {self.factor_vae_prune_threshold}.")

    def codes_drawn(self, scores: Sequence[str] = SCORES) -> int:
        """How many codes :func:`all_scores` asks the source for (the encoder's work)."""
        scores = _check_scores(scores)
        total = 0
        if "beta_vae" in scores:
            total += 2 * self.beta_vae_batch_size * (self.beta_vae_num_train + self.beta_vae_num_eval)
        if "factor_vae" in scores:
            total += self.factor_vae_batch_size * (self.factor_vae_num_train + self.factor_vae_num_eval)
        if set(scores) & {"factor_vae", "mig", "dci", "sap"}:
            total += self._num_shared_train()
        if set(scores) & {"dci", "sap"}:
            total += self.num_test
        return total

    def _num_shared_train(self) -> int:
        # One size whichever scores run, so that a score's value does not depend on the others.
        return max(self.num_train, self.factor_vae_num_variance_estimate, self.dci_num_train)


# ----------------------------------------------------------------------------------------------
# Input checks and sampling


def _rng(seed) -> np.random.Generator:
    return seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)


def _sk_seed(rng: np.random.Generator) -> int:
    return int(rng.integers(0, 2**31 - 1))


def _check_scores(scores: Sequence[str]) -> tuple[str, ...]:
    scores = tuple(scores)
    unknown = [s for s in scores if s not in SCORES]
    if unknown or not scores:
        raise ValueError(f"Unknown or no scores {unknown or list(scores)}; choose from {list(SCORES)}.")
    return scores


def _check_codes(codes, what: str = "codes", n: int | None = None) -> np.ndarray:
    codes = np.asarray(codes, dtype=np.float64)
    if codes.ndim != 2 or codes.shape[1] < 1:
        raise ValueError(f"{what} must have shape [n, d] with d >= 1, got {codes.shape}.")
    if n is not None and codes.shape[0] != n:
        raise ValueError(f"{what} has {codes.shape[0]} rows where {n} were expected.")
    if not np.all(np.isfinite(codes)):
        raise ValueError(f"{what} contains NaN or infinite values.")
    return codes


def _check_factors(factors, n: int, what: str = "factors") -> np.ndarray:
    factors = np.asarray(factors)
    if factors.ndim != 2 or factors.shape[0] != n or factors.shape[1] < 1:
        raise ValueError(f"{what} must have shape [{n}, k] with k >= 1, got {factors.shape}.")
    if not np.issubdtype(factors.dtype, np.integer):
        rounded = np.rint(factors)
        if not np.array_equal(rounded, factors):
            raise ValueError(f"{what} must hold integer factor values.")
        factors = rounded
    return factors.astype(np.int64)


def _names(factor_names: Sequence[str] | None, k: int) -> list[str]:
    if factor_names is None:
        return [f"factor_{i}" for i in range(k)]
    names = [str(n) for n in factor_names]
    if len(names) != k:
        raise ValueError(f"{len(names)} factor names for {k} factors.")
    return names


def _require_varying(factors: np.ndarray, names: Sequence[str], what: str) -> None:
    for j, name in enumerate(names):
        if np.unique(factors[:, j]).size < 2:
            raise ValueError(f"Factor {name!r} takes a single value in the {what}; it cannot be scored.")


def _source_codes(source: FactorSource, factors: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    codes = _check_codes(source.codes(factors, rng), "source.codes(...)", factors.shape[0])
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
    return _check_factors(factors, n, "source.sample_factors(...)")


def draw(source: FactorSource, n: int, seed: Seed = None, chunk_size: int = 4096) -> tuple[np.ndarray, np.ndarray]:
    """Codes float [n, d] and factors int [n, k] of n random observations of ``source``."""
    rng = _rng(seed)
    k = _num_factors(source)
    factors = _sample_factors(source, n, k, rng)
    parts = [_source_codes(source, factors[i:i + chunk_size], rng) for i in range(0, n, chunk_size)]
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
    """BetaVAE's training points: features float [num_points, d], labels int [num_points].

    Each point: a random factor y; two batches of ``batch_size`` factor draws whose row i
    agrees in factor y; feature = mean over the batch of |codes(batch 1) - codes(batch 2)|.
    """
    rng = _rng(seed)
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

    Returns ``train_accuracy`` and ``eval_accuracy`` (the score); chance is 1 / k.
    """
    rng = _rng(seed)
    train_x, train_y = beta_vae_points(source, num_train, batch_size, rng, chunk_size)
    model = LogisticRegression(max_iter=1000, random_state=_sk_seed(rng))
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
    """FactorVAE's votes int [k, d]: votes[y, j] counts points with factor y fixed whose
    active dimension of least variance (relative to ``global_variances``) was j."""
    rng = _rng(seed)
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
    """Accuracy of FactorVAE's classifier: each dimension predicts the factor that voted for
    it most in ``train_votes`` [k, d] (the first on ties); scored on ``eval_votes`` (default:
    the training votes themselves)."""
    train_votes = np.asarray(train_votes)
    votes = train_votes if eval_votes is None else np.asarray(eval_votes)
    if votes.shape != train_votes.shape or votes.ndim != 2:
        raise ValueError(f"Vote matrices must be [k, d] of one shape, got {train_votes.shape} and {votes.shape}.")
    total = votes.sum()
    if total == 0:
        return 0.0
    predicted = np.argmax(train_votes, axis=0)
    return float(votes[predicted, np.arange(votes.shape[1])].sum() / total)


def factor_vae_score(
    source: FactorSource,
    *,
    batch_size: int = 64,
    num_train: int = 10_000,
    num_eval: int = 5_000,
    num_variance_estimate: int = 10_000,
    prune_threshold: float = 0.05,
    variance_codes: np.ndarray | None = None,
    seed: Seed = None,
    chunk_size: int = 4096,
) -> dict[str, float]:
    """FactorVAE score: accuracy of the majority-vote classifier on fixed-factor batches.

    ``variance_codes`` [m, d]: codes of random observations for the global variances (default:
    ``num_variance_estimate`` drawn from the source). Returns ``train_accuracy``,
    ``eval_accuracy`` (the score; chance 1 / k) and ``num_active_dims``; with no active
    dimension both accuracies are 0, as in disentanglement_lib.
    """
    if batch_size < 2:
        raise ValueError(f"FactorVAE needs batches of at least 2 (a variance), got {batch_size}.")
    rng = _rng(seed)
    if variance_codes is None:
        variance_codes, _ = draw(source, num_variance_estimate, rng, chunk_size)
    variance_codes = _check_codes(variance_codes, "variance_codes")
    if variance_codes.shape[0] < 2:
        raise ValueError("The global variances need at least 2 codes.")
    global_variances = np.var(variance_codes, axis=0, ddof=1)
    std = np.sqrt(global_variances)
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


# ----------------------------------------------------------------------------------------------
# MIG


def discretize(codes: np.ndarray, num_bins: int = 20) -> np.ndarray:
    """Each dimension into ``num_bins`` equal-width bins between its min and max: int [n, d]
    in 0 .. num_bins - 1 (disentanglement_lib's histogram_discretizer, less its offset of 1;
    a constant dimension falls into bin 0)."""
    codes = _check_codes(codes)
    binning = KBinsDiscretizer(n_bins=num_bins, encode="ordinal", strategy="uniform", subsample=None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # "Feature j is constant"
        return binning.fit_transform(codes).astype(np.int64)


def discrete_mutual_information(discrete_codes: np.ndarray, factors: np.ndarray) -> np.ndarray:
    """I(z_j; v_k) in nats for discrete codes [n, d] and factors [n, k]: float [d, k]."""
    d, k = discrete_codes.shape[1], factors.shape[1]
    return np.array(
        [[sk_metrics.mutual_info_score(factors[:, i], discrete_codes[:, j]) for i in range(k)] for j in range(d)]
    ).reshape(d, k)


def mig(
    codes: np.ndarray, factors: np.ndarray, *, num_bins: int = 20, factor_names: Sequence[str] | None = None
) -> dict:
    """Mutual information gap: ``{"mig": mean over factors, "per_factor": {name: gap}}``.

    Per factor v_k: (largest - second largest of I(z_j; v_k) over dimensions j) / H(v_k),
    with the codes discretised as :func:`discretize` does. With one dimension the second
    largest is 0.
    """
    codes = _check_codes(codes)
    factors = _check_factors(factors, codes.shape[0])
    names = _names(factor_names, factors.shape[1])
    _require_varying(factors, names, "MIG sample")
    information = discrete_mutual_information(discretize(codes, num_bins), factors)
    entropy = np.array([sk_metrics.mutual_info_score(f, f) for f in factors.T])
    top = np.sort(information, axis=0)[::-1]
    second = top[1] if top.shape[0] > 1 else np.zeros_like(top[0])
    gaps = (top[0] - second) / entropy
    return {"mig": float(np.mean(gaps)), "per_factor": {n: float(g) for n, g in zip(names, gaps)}}


# ----------------------------------------------------------------------------------------------
# DCI


def _fit_gbt(train_x, train_y, test_x, test_y, seed: int):
    model = GradientBoostingClassifier(random_state=seed)
    model.fit(train_x, train_y)
    return np.abs(model.feature_importances_), model.score(train_x, train_y), model.score(test_x, test_y)


def dci_importance(
    codes: np.ndarray,
    factors: np.ndarray,
    test_codes: np.ndarray,
    test_factors: np.ndarray,
    *,
    seed: Seed = None,
    n_jobs: int = -1,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Gradient-boosted trees per factor: importance [d, k], train and test accuracy [k]."""
    codes = _check_codes(codes)
    factors = _check_factors(factors, codes.shape[0])
    test_codes = _check_codes(test_codes, "test_codes")
    if test_codes.shape[1] != codes.shape[1]:
        raise ValueError(f"test_codes have {test_codes.shape[1]} dimensions, codes {codes.shape[1]}.")
    test_factors = _check_factors(test_factors, test_codes.shape[0], "test_factors")
    if test_factors.shape[1] != factors.shape[1]:
        raise ValueError(f"test_factors have {test_factors.shape[1]} factors, factors {factors.shape[1]}.")
    rng = _rng(seed)
    seeds = [_sk_seed(rng) for _ in range(factors.shape[1])]
    # Tree building releases the GIL, so threads run the factors in parallel without copies.
    # A factor of c values costs c trees per stage: the largest go first, which balances the
    # threads (Shapes3D on 2 threads: 29 and 28 of the 57 values).
    order = sorted(range(factors.shape[1]), key=lambda i: -np.unique(factors[:, i]).size)
    fits = joblib.Parallel(n_jobs=n_jobs, prefer="threads")(
        joblib.delayed(_fit_gbt)(codes, factors[:, i], test_codes, test_factors[:, i], seeds[i]) for i in order
    )
    fits = dict(zip(order, fits))
    fits = [fits[i] for i in range(factors.shape[1])]
    importance = np.stack([f[0] for f in fits], axis=1)
    return importance, np.array([f[1] for f in fits]), np.array([f[2] for f in fits])


def _weighted_one_minus_entropy(importance: np.ndarray) -> float:
    """sum_j w_j (1 - H_base(P_j)) over rows j of importance [rows, cols], H in base cols."""
    rows, cols = importance.shape
    if cols == 1:
        per_row = np.ones(rows)
    else:
        per_row = 1.0 - scipy.stats.entropy(importance.T + _IMPORTANCE_EPS, base=cols)
    weights = importance if importance.sum() > 0 else np.ones_like(importance)
    weights = weights.sum(axis=1) / weights.sum()
    return float(np.sum(per_row * weights))


def dci_disentanglement(importance: np.ndarray) -> float:
    """Disentanglement of an importance matrix R [d codes, k factors]: the importance-weighted
    mean over codes of 1 - H_k(R_j / sum R_j) (entropy in base k)."""
    importance = np.asarray(importance, dtype=np.float64)
    if importance.ndim != 2 or np.any(importance < 0):
        raise ValueError("An importance matrix is a non-negative [d, k] array.")
    return _weighted_one_minus_entropy(importance)


def dci_completeness(importance: np.ndarray) -> float:
    """Completeness of R [d codes, k factors]: the importance-weighted mean over factors of
    1 - H_d(R_:k / sum R_:k) (entropy in base d)."""
    importance = np.asarray(importance, dtype=np.float64)
    if importance.ndim != 2 or np.any(importance < 0):
        raise ValueError("An importance matrix is a non-negative [d, k] array.")
    return _weighted_one_minus_entropy(importance.T)


def dci(
    codes: np.ndarray,
    factors: np.ndarray,
    test_codes: np.ndarray,
    test_factors: np.ndarray,
    *,
    factor_names: Sequence[str] | None = None,
    seed: Seed = None,
    n_jobs: int = -1,
) -> dict[str, float]:
    """DCI from gradient-boosted trees: ``disentanglement``, ``completeness``,
    ``informativeness_train`` and ``informativeness_test`` (mean accuracies over factors)."""
    codes = _check_codes(codes)
    factors = _check_factors(factors, codes.shape[0])
    _require_varying(factors, _names(factor_names, factors.shape[1]), "DCI training set")
    importance, train_accuracy, test_accuracy = dci_importance(
        codes, factors, test_codes, test_factors, seed=seed, n_jobs=n_jobs
    )
    return {
        "disentanglement": dci_disentanglement(importance),
        "completeness": dci_completeness(importance),
        "informativeness_train": float(np.mean(train_accuracy)),
        "informativeness_test": float(np.mean(test_accuracy)),
    }


# ----------------------------------------------------------------------------------------------
# SAP


def sap_score_matrix(
    codes: np.ndarray,
    factors: np.ndarray,
    test_codes: np.ndarray | None = None,
    test_factors: np.ndarray | None = None,
    *,
    continuous_factors: bool = False,
    standardize: bool = True,
    seed: Seed = None,
) -> np.ndarray:
    """SAP's score matrix [d, k]: how well code dimension j alone predicts factor k.

    ``continuous_factors``: squared Pearson correlation on the training set; otherwise the
    test accuracy of ``LinearSVC(C=0.01, class_weight="balanced")`` trained on dimension j.
    """
    codes = _check_codes(codes)
    factors = _check_factors(factors, codes.shape[0])
    d, k = codes.shape[1], factors.shape[1]
    if continuous_factors:
        scores = np.stack([r_regression(codes, factors[:, i].astype(np.float64)) ** 2 for i in range(k)], axis=1)
        scores[np.var(codes, axis=0, ddof=1) <= _MIN_CODE_VARIANCE] = 0.0
        return scores
    if test_codes is None or test_factors is None:
        raise ValueError("SAP with discrete factors needs test_codes and test_factors.")
    test_codes = _check_codes(test_codes, "test_codes")
    test_factors = _check_factors(test_factors, test_codes.shape[0], "test_factors")
    if test_codes.shape[1] != d or test_factors.shape[1] != k:
        raise ValueError(f"Test set [{test_codes.shape[1]} dims, {test_factors.shape[1]} factors] "
                         f"does not match the training set [{d}, {k}].")
    if standardize:
        scaler = StandardScaler().fit(codes)
        codes, test_codes = scaler.transform(codes), scaler.transform(test_codes)
    rng = _rng(seed)
    scores = np.zeros((d, k))
    for j in range(d):
        for i in range(k):
            classifier = LinearSVC(C=0.01, class_weight="balanced", random_state=_sk_seed(rng))
            classifier.fit(codes[:, j:j + 1], factors[:, i])
            scores[j, i] = classifier.score(test_codes[:, j:j + 1], test_factors[:, i])
    return scores


def sap_gaps(score_matrix: np.ndarray) -> np.ndarray:
    """Per factor (column), the gap between the two largest entries [k]."""
    score_matrix = np.asarray(score_matrix, dtype=np.float64)
    if score_matrix.ndim != 2 or score_matrix.shape[0] < 1:
        raise ValueError(f"A score matrix is [d, k], got shape {score_matrix.shape}.")
    top = np.sort(score_matrix, axis=0)[::-1]
    second = top[1] if top.shape[0] > 1 else np.zeros_like(top[0])
    return top[0] - second


def sap_gap(score_matrix: np.ndarray) -> float:
    """Mean over factors (columns) of the gap between the two largest entries."""
    return float(np.mean(sap_gaps(score_matrix)))


def sap(
    codes: np.ndarray,
    factors: np.ndarray,
    test_codes: np.ndarray | None = None,
    test_factors: np.ndarray | None = None,
    *,
    factor_names: Sequence[str] | None = None,
    **options,
) -> dict:
    """SAP score: ``{"sap": mean gap, "per_factor": {name: gap}}``; ``options`` (continuous_factors,
    standardize, seed) as :func:`sap_score_matrix` takes them."""
    codes = _check_codes(codes)
    factors = _check_factors(factors, codes.shape[0])
    names = _names(factor_names, factors.shape[1])
    _require_varying(factors, names, "SAP training set")
    gaps = sap_gaps(sap_score_matrix(codes, factors, test_codes, test_factors, **options))
    return {"sap": float(np.mean(gaps)), "per_factor": {n: float(g) for n, g in zip(names, gaps)}}


# ----------------------------------------------------------------------------------------------
# All of them


def all_scores(
    source: FactorSource,
    settings: ScoreSettings = ScoreSettings(),
    seed: int = 0,
    scores: Sequence[str] = SCORES,
) -> dict[str, dict]:
    """The chosen ``scores`` of ``source``'s representation, keyed by score name.

    ``{"beta_vae": {...}, "factor_vae": {...}, "mig": {...}, "dci": {...}, "sap": {...}}``
    with the dicts of :func:`beta_vae_score`, :func:`factor_vae_score`, :func:`mig`,
    :func:`dci` and :func:`sap`. Each score draws from its own seed stream, so a score's value
    does not depend on which others were asked for. MIG, DCI and SAP share one training set of
    ``num_train`` observations (DCI and SAP one test set of ``num_test``); FactorVAE's global
    variances come from the first ``factor_vae_num_variance_estimate`` codes of that set.
    """
    scores = _check_scores(scores)
    settings.validate()
    names = list(source.factor_names)
    streams = [np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(len(SCORES) + 2)]
    stream = dict(zip(SCORES + ("train", "test"), streams))
    chunk = settings.chunk_size
    train = test = None
    if set(scores) & {"factor_vae", "mig", "dci", "sap"}:
        train = draw(source, settings._num_shared_train(), stream["train"], chunk)
    if set(scores) & {"dci", "sap"}:
        test = draw(source, settings.num_test, stream["test"], chunk)
    results: dict[str, dict] = {}
    for name in scores:
        if name == "beta_vae":
            results[name] = beta_vae_score(
                source, batch_size=settings.beta_vae_batch_size, num_train=settings.beta_vae_num_train,
                num_eval=settings.beta_vae_num_eval, standardize=settings.standardize,
                seed=stream[name], chunk_size=chunk,
            )
        elif name == "factor_vae":
            results[name] = factor_vae_score(
                source, batch_size=settings.factor_vae_batch_size, num_train=settings.factor_vae_num_train,
                num_eval=settings.factor_vae_num_eval, prune_threshold=settings.factor_vae_prune_threshold,
                variance_codes=train[0][: settings.factor_vae_num_variance_estimate],
                seed=stream[name], chunk_size=chunk,
            )
        elif name == "mig":
            n = settings.num_train
            results[name] = mig(train[0][:n], train[1][:n], num_bins=settings.mig_num_bins, factor_names=names)
        elif name == "dci":
            n = settings.dci_num_train
            results[name] = dci(
                train[0][:n], train[1][:n], test[0], test[1],
                factor_names=names, seed=stream[name], n_jobs=settings.n_jobs,
            )
        elif name == "sap":
            n = settings.num_train
            results[name] = sap(
                train[0][:n], train[1][:n], test[0], test[1],
                continuous_factors=settings.sap_continuous_factors, standardize=settings.standardize,
                factor_names=names, seed=stream[name],
            )
    return results
