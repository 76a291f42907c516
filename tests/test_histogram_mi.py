"""Known-answer tests of the histogram mutual information estimator (docs/PAPERS.md section 4)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from abc_tf.evaluation.estimators import histogram_mi as hmi
from mi_cases import GAUSSIAN_MI, correlated_gaussians, separated_clusters


def test_histogram_correlated_gaussians_within_ten_percent():
    x, y = correlated_gaussians(100_000)
    rng = np.random.default_rng(1)
    # U is a 2-D embedding whose first coordinate carries x; G is y in 32 equally likely classes.
    embeddings = np.stack([x, rng.normal(size=x.size)], axis=1)
    estimate = hmi.histogram_mutual_information(embeddings, hmi.quantile_bins(y, 32))
    assert estimate == pytest.approx(GAUSSIAN_MI, rel=0.10)


def test_histogram_separating_embedding_gives_log_k():
    for k in (2, 4, 10):
        embeddings, labels = separated_clusters(20_000, k)
        assert hmi.histogram_mutual_information(embeddings, labels) == pytest.approx(math.log(k), rel=0.02)


def test_histogram_independent_noise_is_about_zero_and_multi_factor_shape():
    rng = np.random.default_rng(2)
    embeddings = rng.normal(size=(20_000, 2))
    factors = rng.integers(0, 6, size=(20_000, 3))
    values = hmi.histogram_mutual_information(embeddings, factors)
    assert values.shape == (3,)
    assert np.all(np.abs(values) < 0.05)
    # Miller-Madow removes most of the plug-in estimator's positive bias.
    corrected = hmi.histogram_mutual_information(embeddings, factors, miller_madow=True)
    assert np.all(np.abs(corrected) < np.abs(values))


def test_histogram_large_noise_drives_estimate_to_zero():
    embeddings, labels = separated_clusters(20_000, 4)
    sweep = hmi.histogram_sigma_sweep(embeddings, labels, [0.0, 0.7, 100.0], seed=3)
    assert sweep.shape == (3, 1)
    assert sweep[0, 0] == pytest.approx(math.log(4), rel=0.02)
    assert sweep[0, 0] > sweep[1, 0] > sweep[2, 0]
    assert sweep[2, 0] < 0.05


def test_histogram_entropy_and_binning():
    assert hmi.entropy_from_counts(np.array([5, 5, 0, 5, 5])) == pytest.approx(math.log(4))
    edges = hmi.histogram_edges(np.random.default_rng(0).normal(size=(10_000, 2)))
    # sqrt(10000) = 100 bins in all: 10 per axis.
    assert [len(edge) - 1 for edge in edges] == [10, 10]
    classes = hmi.quantile_bins(np.arange(100.0), 4)
    assert np.bincount(classes).tolist() == [25, 25, 25, 25]


def test_bad_inputs_raise_clear_errors():
    with pytest.raises(ValueError, match="same|N ="):
        hmi.histogram_mutual_information(np.zeros((10, 2)), np.zeros(9))
    with pytest.raises(ValueError, match="D <= 3"):
        hmi.histogram_mutual_information(np.zeros((10, 8)), np.zeros(10))
    with pytest.raises(ValueError, match="NaN"):
        hmi.histogram_mutual_information(np.full((10, 2), np.nan), np.zeros(10))
