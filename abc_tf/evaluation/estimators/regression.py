"""How well embeddings predict continuous per-image measures: the regression twin of the factor probes.

Ridge and k-nearest-neighbour regressions fit on half of the seen classes' images. R^2 is scored on the
other half and on a held-out class. Scores are on the raw measure and within class. Within class,
each class's mean is removed, so only the deviation from what the class implies is scored.
Used for the MNIST style measures such as slant and thickness (paper Fig. 4).
"""

from __future__ import annotations

import numpy as np


def r2_score(target: np.ndarray, prediction: np.ndarray) -> float:
    """Coefficient of determination 1 - SSE / SST, with SST around the target's own mean."""
    target, prediction = np.asarray(target, np.float64), np.asarray(prediction, np.float64)
    total = np.sum((target - target.mean()) ** 2)
    return float(1.0 - np.sum((target - prediction) ** 2) / total) if total > 0 else float("nan")


def ridge_predict(
    train_x: np.ndarray, train_y: np.ndarray, test_x: np.ndarray, alpha: float = 1e-3
) -> np.ndarray:
    """Ridge regression on standardised features; alpha is relative to the number of points."""
    mean, scale = train_x.mean(axis=0), train_x.std(axis=0) + 1e-12
    a = (train_x - mean) / scale
    b = (test_x - mean) / scale
    gram = a.T @ a + alpha * len(a) * np.eye(a.shape[1])
    weights = np.linalg.solve(gram, a.T @ (train_y - train_y.mean()))
    return b @ weights + train_y.mean()


def knn_predict(
    train_x: np.ndarray, train_y: np.ndarray, test_x: np.ndarray, k: int = 10, chunk: int = 2048
) -> np.ndarray:
    """Mean target of the k nearest training points, by Euclidean distance, the embedding's own metric."""
    k = min(k, len(train_x))
    train_norms = np.sum(train_x**2, axis=1)
    out = np.empty(len(test_x))
    for start in range(0, len(test_x), chunk):
        block = test_x[start : start + chunk]
        distances = np.sum(block**2, axis=1)[:, None] + train_norms[None, :] - 2.0 * block @ train_x.T
        nearest = np.argpartition(distances, k - 1, axis=1)[:, :k]
        out[start : start + chunk] = train_y[nearest].mean(axis=1)
    return out


def centre_by_class(values: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """values [N] or [N, ...] minus the mean of their class; labels [N]."""
    out = np.asarray(values, np.float64).copy()
    for label in np.unique(labels):
        out[labels == label] -= out[labels == label].mean()
    return out


def style_predictability(
    embeddings: np.ndarray,
    measures: dict[str, np.ndarray],
    labels: np.ndarray,
    holdout_digit: int | None,
    seed: int = 0,
    k: int = 10,
) -> dict[str, dict[str, float]]:
    """How well embeddings [N, D] predict each style measure [N], as R^2: 1 is perfect, 0 is the mean.

    The training digits' images are split in half. Ridge and kNN fit on one half. They are scored on the
    other half ("seen_digits") and on all images of the held-out digit ("holdout_digit").
    ``within_digit`` variants first subtract each digit's mean measure. They score only the style
    deviation, not what the digit itself implies. Returns {measure: {"<method>_<variant>_<split>": R^2}}.
    """
    labels = np.asarray(labels).astype(np.int64)
    embeddings = np.asarray(embeddings, np.float64)
    seen = np.flatnonzero(labels != (-1 if holdout_digit is None else holdout_digit))
    held = np.flatnonzero(labels == holdout_digit) if holdout_digit is not None else np.zeros(0, np.int64)
    order = np.random.default_rng(seed).permutation(seen)
    fit, score = order[: len(order) // 2], order[len(order) // 2 :]
    results: dict[str, dict[str, float]] = {}
    for name, values in measures.items():
        values = np.asarray(values, np.float64)
        targets = {"raw": values, "within_digit": centre_by_class(values, labels)}
        entry: dict[str, float] = {}
        for variant, target in targets.items():
            for method, predict in (
                ("ridge", ridge_predict),
                ("knn", lambda a, b, c: knn_predict(a, b, c, k)),
            ):
                evaluation = np.concatenate([score, held])
                prediction = predict(embeddings[fit], target[fit], embeddings[evaluation])
                entry[f"{method}_{variant}_seen_digits"] = r2_score(target[score], prediction[: len(score)])
                if len(held):
                    entry[f"{method}_{variant}_holdout_digit"] = r2_score(
                        target[held], prediction[len(score) :]
                    )
        results[name] = entry
    return results
