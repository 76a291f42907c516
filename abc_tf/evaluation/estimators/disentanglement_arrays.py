"""MIG, DCI and SAP: disentanglement scores read off given codes and factors (docs/PAPERS.md section P4).

These scores need no observations drawn to order, only arrays. So any family's labelled sample
serves, MNIST's binned style factors included. The inputs are:

- ``codes`` float [n, d]: the representation of n observations;
- ``factors`` int [n, k]: their factor values, any integers, one column per factor;
- ``factor_names``: optional names of the k factors, the keys of per-factor results.

:func:`mig` takes one such set; :func:`dci` and :func:`sap` take a training and a test set.
Definitions follow disentanglement_lib's ``config/unsupervised_study_v1/metric_configs/*.gin`` and
metric modules, rebuilt on NumPy and scikit-learn. Each score function states its definition and
our deliberate differences. All scores seed their trees and SVMs from the caller's seed, so results repeat.
A factor with a single value in a training set is an error: MIG would divide by its zero entropy,
and no classifier can be fitted. Input checks and seed helpers here are shared with disentanglement_sampled.
"""

from __future__ import annotations

import warnings
from typing import Sequence, Union

import joblib
import numpy as np
import scipy.stats
from sklearn import metrics as sk_metrics
from sklearn.ensemble import GradientBoostingClassifier, HistGradientBoostingClassifier
from sklearn.feature_selection import r_regression
from sklearn.preprocessing import KBinsDiscretizer, StandardScaler
from sklearn.svm import LinearSVC

from abc_tf.evaluation.progress import Progress

# Entropies of importance rows/columns get this added, as disentanglement_lib does, so that
# an all-zero row is the uniform distribution (entropy 1: it contributes nothing).
_IMPORTANCE_EPS = 1e-11
# SAP (continuous): dimensions of smaller variance score 0, as in disentanglement_lib.
_MIN_CODE_VARIANCE = 1e-12

# A seed for np.random.default_rng, or a generator to draw from (and advance).
Seed = Union[int, np.random.Generator, None]


# ----------------------------------------------------------------------------------------------
# Input checks and seeds


def rng_of(seed: Seed) -> np.random.Generator:
    """``seed`` itself when it is a generator, drawn from and advanced; else a new generator from it."""
    return seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)


def sklearn_seed(rng: np.random.Generator) -> int:
    """A ``random_state`` for a scikit-learn estimator, drawn from ``rng``."""
    return int(rng.integers(0, 2**31 - 1))


def check_codes(codes, what: str = "codes", n: int | None = None) -> np.ndarray:
    """float64 [n, d]: d >= 1, finite, ``n`` rows when given. Raises ValueError naming ``what``."""
    codes = np.asarray(codes, dtype=np.float64)
    if codes.ndim != 2 or codes.shape[1] < 1:
        raise ValueError(f"{what} must have shape [n, d] with d >= 1, got {codes.shape}.")
    if n is not None and codes.shape[0] != n:
        raise ValueError(f"{what} has {codes.shape[0]} rows where {n} were expected.")
    if not np.all(np.isfinite(codes)):
        raise ValueError(f"{what} contains NaN or infinite values.")
    return codes


def check_factors(factors, n: int, what: str = "factors") -> np.ndarray:
    """int64 [n, k]: k >= 1, integer values. Raises ValueError naming ``what``."""
    factors = np.asarray(factors)
    if factors.ndim != 2 or factors.shape[0] != n or factors.shape[1] < 1:
        raise ValueError(f"{what} must have shape [{n}, k] with k >= 1, got {factors.shape}.")
    if not np.issubdtype(factors.dtype, np.integer):
        rounded = np.rint(factors)
        if not np.array_equal(rounded, factors):
            raise ValueError(f"{what} must hold integer factor values.")
        factors = rounded
    return factors.astype(np.int64)


def names_of(factor_names: Sequence[str] | None, k: int) -> list[str]:
    """The k factors' names, default ``factor_0, ...``; ValueError on a wrong count."""
    if factor_names is None:
        return [f"factor_{i}" for i in range(k)]
    names = [str(n) for n in factor_names]
    if len(names) != k:
        raise ValueError(f"{len(names)} factor names for {k} factors.")
    return names


def require_varying(factors: np.ndarray, names: Sequence[str], what: str) -> None:
    """Raises ValueError when a factor takes a single value in ``factors``: it cannot be scored."""
    for j, name in enumerate(names):
        if np.unique(factors[:, j]).size < 2:
            raise ValueError(f"Factor {name!r} takes a single value in the {what}; it cannot be scored.")


# ----------------------------------------------------------------------------------------------
# MIG


def discretize(codes: np.ndarray, num_bins: int = 20) -> np.ndarray:
    """Each dimension into ``num_bins`` equal-width bins between its min and max.

    Returns int [n, d] in 0 .. num_bins - 1.

    This is disentanglement_lib's histogram_discretizer, less its offset of 1.
    A constant dimension falls into bin 0.
    """
    codes = check_codes(codes)
    binning = KBinsDiscretizer(n_bins=num_bins, encode="ordinal", strategy="uniform", subsample=None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # "Feature j is constant"
        return binning.fit_transform(codes).astype(np.int64)


def discrete_mutual_information(discrete_codes: np.ndarray, factors: np.ndarray) -> np.ndarray:
    """I(z_j; v_k) in nats for discrete codes [n, d] and factors [n, k]: float [d, k]."""
    d, k = discrete_codes.shape[1], factors.shape[1]
    return np.array(
        [
            [sk_metrics.mutual_info_score(factors[:, i], discrete_codes[:, j]) for i in range(k)]
            for j in range(d)
        ]
    ).reshape(d, k)


def mig(
    codes: np.ndarray, factors: np.ndarray, *, num_bins: int = 20, factor_names: Sequence[str] | None = None
) -> dict:
    """Mutual information gap: ``{"mig": mean over factors, "per_factor": {name: gap}}``.

    Source: disentanglement_lib, ``mig.gin``. Codes are discretised by :func:`discretize`, 20 bins by default.
    Per factor v_k, the gap is (largest - second largest I(z_j; v_k) over dimensions j) / H(v_k), in nats.
    With one dimension the second largest is 0.
    """
    codes = check_codes(codes)
    factors = check_factors(factors, codes.shape[0])
    names = names_of(factor_names, factors.shape[1])
    require_varying(factors, names, "MIG sample")
    information = discrete_mutual_information(discretize(codes, num_bins), factors)
    entropy = np.array([sk_metrics.mutual_info_score(f, f) for f in factors.T])
    top = np.sort(information, axis=0)[::-1]
    second = top[1] if top.shape[0] > 1 else np.zeros_like(top[0])
    gaps = (top[0] - second) / entropy
    return {"mig": float(np.mean(gaps)), "per_factor": {n: float(g) for n, g in zip(names, gaps)}}


# ----------------------------------------------------------------------------------------------
# DCI


DCI_TREES = ("exact", "histogram")


def _fit_gbt(train_x, train_y, test_x, test_y, seed: int, trees: str = "exact"):
    if trees == "exact":
        model = GradientBoostingClassifier(random_state=seed)
        model.fit(train_x, train_y)
        importance = model.feature_importances_
    else:
        # The exact trees' schedule (100 stages of depth-3 trees, learning rate 0.1) on binned
        # codes; no early stopping, so every stage is kept as in the exact trees.
        model = HistGradientBoostingClassifier(
            max_iter=100,
            learning_rate=0.1,
            max_depth=3,
            max_leaf_nodes=None,
            early_stopping=False,
            random_state=seed,
        )
        model.fit(train_x, train_y)
        importance = _histogram_importance(model, train_x.shape[1])
    return np.abs(importance), model.score(train_x, train_y), model.score(test_x, test_y)


def _histogram_importance(model: HistGradientBoostingClassifier, num_features: int) -> np.ndarray:
    """Feature importances of histogram trees, computed as scikit-learn does for the exact trees.

    Each feature's loss reduction is summed over the splits of all trees and normalised to sum 1.
    The estimator has no ``feature_importances_``, so split gains are read from ``_predictors``.
    Late trees fit small residuals with small gains, so they weigh little, as in the exact trees.
    """
    importance = np.zeros(num_features)
    for trees in model._predictors:
        for tree in trees:
            splits = tree.nodes[~tree.nodes["is_leaf"].astype(bool)]
            np.add.at(importance, splits["feature_idx"], np.maximum(splits["gain"], 0.0))
    return importance / importance.sum() if importance.sum() > 0 else importance


def dci_importance(
    codes: np.ndarray,
    factors: np.ndarray,
    test_codes: np.ndarray,
    test_factors: np.ndarray,
    *,
    seed: Seed = None,
    n_jobs: int = -1,
    trees: str = "exact",
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Gradient-boosted trees per factor: importance [d, k], train and test accuracy [k].

    ``trees``: "exact" is scikit-learn's ``GradientBoostingClassifier``, as the library uses.
    "histogram" is ``HistGradientBoostingClassifier`` on the same schedule. It is about 10x faster,
    with scores shifted by the amount BENCHMARKS.md states.
    """
    if trees not in DCI_TREES:
        raise ValueError(f"Unknown DCI trees {trees!r}; choose from {', '.join(DCI_TREES)}.")
    codes = check_codes(codes)
    factors = check_factors(factors, codes.shape[0])
    test_codes = check_codes(test_codes, "test_codes")
    if test_codes.shape[1] != codes.shape[1]:
        raise ValueError(f"test_codes have {test_codes.shape[1]} dimensions, codes {codes.shape[1]}.")
    test_factors = check_factors(test_factors, test_codes.shape[0], "test_factors")
    if test_factors.shape[1] != factors.shape[1]:
        raise ValueError(f"test_factors have {test_factors.shape[1]} factors, factors {factors.shape[1]}.")
    rng = rng_of(seed)
    seeds = [sklearn_seed(rng) for _ in range(factors.shape[1])]
    # Tree building releases the GIL, so threads run the factors in parallel without copies.
    # A factor of c values costs c trees per stage: the largest go first, which balances the
    # threads (Shapes3D on 2 threads: 29 and 28 of the 57 values).
    order = sorted(range(factors.shape[1]), key=lambda i: -np.unique(factors[:, i]).size)
    done = joblib.Parallel(n_jobs=n_jobs, prefer="threads", return_as="generator")(
        joblib.delayed(_fit_gbt)(codes, factors[:, i], test_codes, test_factors[:, i], seeds[i], trees)
        for i in order
    )
    fits = {}
    # The trees are nearly all of the scores' own time (disentanglement.all_scores, "Cost"): progress
    # counts the factors whose trees are done.
    with Progress(f"DCI trees ({factors.shape[1]} factors)", factors.shape[1], "factors") as progress:
        for index, fit in zip(order, done):
            fits[index] = fit
            progress.update(len(fits))
    fits = [fits[i] for i in range(factors.shape[1])]
    importance = np.stack([f[0] for f in fits], axis=1)
    return importance, np.array([f[1] for f in fits]), np.array([f[2] for f in fits])


def _weighted_one_minus_entropy(importance: np.ndarray) -> float:
    """sum_j w_j (1 - H_base(P_j)) over rows j of importance [rows, cols], H in base cols.

    With one column each row's term is 1.
    """
    rows, cols = importance.shape
    if cols == 1:
        per_row = np.ones(rows)
    else:
        per_row = 1.0 - scipy.stats.entropy(importance.T + _IMPORTANCE_EPS, base=cols)
    weights = importance if importance.sum() > 0 else np.ones_like(importance)
    weights = weights.sum(axis=1) / weights.sum()
    return float(np.sum(per_row * weights))


def dci_disentanglement(importance: np.ndarray) -> float:
    """Disentanglement of an importance matrix R [d codes, k factors].

    The importance-weighted mean over codes of 1 - H_k(R_j / sum R_j), with entropy in base k.
    """
    importance = np.asarray(importance, dtype=np.float64)
    if importance.ndim != 2 or np.any(importance < 0):
        raise ValueError("An importance matrix is a non-negative [d, k] array.")
    return _weighted_one_minus_entropy(importance)


def dci_completeness(importance: np.ndarray) -> float:
    """Completeness of R [d codes, k factors].

    The importance-weighted mean over factors of 1 - H_d(R_:k / sum R_:k), with entropy in base d.
    """
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
    trees: str = "exact",
) -> dict[str, float]:
    """DCI from gradient-boosted trees: disentanglement, completeness and informativeness.

    Source: disentanglement_lib, ``dci.gin``. One classifier per factor;
      by default 100 stages of depth-3 trees.
    R [d, k] = |feature importances|; see :func:`dci_importance` for ``trees``.
    Returns ``disentanglement``, ``completeness``, ``informativeness_train`` and ``informativeness_test``.
    The informativeness values are mean accuracies over factors.
    """
    codes = check_codes(codes)
    factors = check_factors(factors, codes.shape[0])
    require_varying(factors, names_of(factor_names, factors.shape[1]), "DCI training set")
    importance, train_accuracy, test_accuracy = dci_importance(
        codes, factors, test_codes, test_factors, seed=seed, n_jobs=n_jobs, trees=trees
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

    Default: the test accuracy of ``LinearSVC(C=0.01, class_weight="balanced")`` trained on dimension j.
    ``continuous_factors``: the squared Pearson correlation on the training set instead.
    Dimensions of variance <= 1e-12 then score 0.
    ``standardize`` standardises the SVMs' inputs. Ours, deliberate: the SVM is L2-regularised with a
    fixed C, so without it the score changes when a code is merely rescaled.
    """
    codes = check_codes(codes)
    factors = check_factors(factors, codes.shape[0])
    d, k = codes.shape[1], factors.shape[1]
    if continuous_factors:
        scores = np.stack(
            [r_regression(codes, factors[:, i].astype(np.float64)) ** 2 for i in range(k)], axis=1
        )
        scores[np.var(codes, axis=0, ddof=1) <= _MIN_CODE_VARIANCE] = 0.0
        return scores
    if test_codes is None or test_factors is None:
        raise ValueError("SAP with discrete factors needs test_codes and test_factors.")
    test_codes = check_codes(test_codes, "test_codes")
    test_factors = check_factors(test_factors, test_codes.shape[0], "test_factors")
    if test_codes.shape[1] != d or test_factors.shape[1] != k:
        raise ValueError(
            f"Test set [{test_codes.shape[1]} dims, {test_factors.shape[1]} factors] "
            f"does not match the training set [{d}, {k}]."
        )
    if standardize:
        scaler = StandardScaler().fit(codes)
        codes, test_codes = scaler.transform(codes), scaler.transform(test_codes)
    rng = rng_of(seed)
    scores = np.zeros((d, k))
    for j in range(d):
        for i in range(k):
            classifier = LinearSVC(C=0.01, class_weight="balanced", random_state=sklearn_seed(rng))
            classifier.fit(codes[:, j : j + 1], factors[:, i])
            scores[j, i] = classifier.score(test_codes[:, j : j + 1], test_factors[:, i])
    return scores


def sap_gaps(score_matrix: np.ndarray) -> np.ndarray:
    """Per factor (column), the gap between the two largest entries [k]."""
    score_matrix = np.asarray(score_matrix, dtype=np.float64)
    if score_matrix.ndim != 2 or score_matrix.shape[0] < 1:
        raise ValueError(f"A score matrix is [d, k], got shape {score_matrix.shape}.")
    top = np.sort(score_matrix, axis=0)[::-1]
    second = top[1] if top.shape[0] > 1 else np.zeros_like(top[0])
    return top[0] - second


def sap(
    codes: np.ndarray,
    factors: np.ndarray,
    test_codes: np.ndarray | None = None,
    test_factors: np.ndarray | None = None,
    *,
    factor_names: Sequence[str] | None = None,
    **options,
) -> dict:
    """SAP score: ``{"sap": mean gap, "per_factor": {name: gap}}``.

    Source: disentanglement_lib, ``sap_score.gin`` with ``continuous_factors=False``. ``options``
    (continuous_factors, standardize, seed) go to :func:`sap_score_matrix`. The score is the mean over
    factors of the gap between the top two entries of the matrix's column.

    A one-vs-rest linear SVM on one dimension cannot single out a factor's middle values. So with
    discrete factors even the identity code scores far below 1: 0.24 for Shapes3D's sizes at the
    library's counts. The library's own identity test, like ours, uses ``continuous_factors=True``.
    """
    codes = check_codes(codes)
    factors = check_factors(factors, codes.shape[0])
    names = names_of(factor_names, factors.shape[1])
    require_varying(factors, names, "SAP training set")
    gaps = sap_gaps(sap_score_matrix(codes, factors, test_codes, test_factors, **options))
    return {"sap": float(np.mean(gaps)), "per_factor": {n: float(g) for n, g in zip(names, gaps)}}
