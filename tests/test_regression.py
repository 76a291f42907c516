"""Regression of per-image measures from embeddings: R^2, ridge, kNN, within-class scoring."""

import numpy as np
import pytest

from abc_tf.evaluation.estimators import regression


def test_r2_ridge_knn_and_class_centring_on_known_answers():
    assert regression.r2_score([1.0, 2.0, 3.0], [1.0, 2.0, 3.0]) == 1.0
    assert regression.r2_score([1.0, 2.0, 3.0], [2.0, 2.0, 2.0]) == 0.0
    assert np.isnan(regression.r2_score([2.0, 2.0], [1.0, 3.0]))
    x = np.random.default_rng(0).normal(size=(200, 3))
    y = x @ np.array([1.0, -2.0, 0.5]) + 3.0
    np.testing.assert_allclose(regression.ridge_predict(x, y, x[:5], alpha=0.0), y[:5], atol=1e-9)
    # The 2 nearest of 0, 1, 10, 11 to 0.4 are 0 and 1.
    points = np.array([[0.0], [1.0], [10.0], [11.0]])
    assert regression.knn_predict(points, np.array([1.0, 3.0, 5.0, 7.0]), np.array([[0.4]]), k=2)[
        0
    ] == pytest.approx(2.0)
    np.testing.assert_allclose(
        regression.centre_by_class([1.0, 3.0, 10.0, 14.0], np.array([0, 0, 1, 1])), [-1, 1, -2, 2]
    )


def test_style_predictability_scores_informative_embeddings_high():
    rng = np.random.default_rng(0)
    labels = np.repeat(np.arange(10), 60)
    style = rng.normal(size=len(labels))
    measures = {"slant": style + 0.5 * labels}
    informative = np.stack([style, labels, rng.normal(size=len(labels))], axis=1)
    noise = rng.normal(size=(len(labels), 3))
    good = regression.style_predictability(informative, measures, labels, holdout_digit=9)["slant"]
    bad = regression.style_predictability(noise, measures, labels, holdout_digit=9)["slant"]
    assert good["ridge_within_digit_seen_digits"] > 0.95 and good["ridge_within_digit_holdout_digit"] > 0.95
    assert good["knn_raw_seen_digits"] > 0.8
    assert bad["ridge_within_digit_seen_digits"] < 0.1 and bad["knn_within_digit_holdout_digit"] < 0.2
