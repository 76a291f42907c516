"""Known-answer tests of the mutual information estimators (SPEC.md section 4)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from abc_tf.evaluation import mutual_info as mi

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


# Small but convergent MINE settings: one compiled loop of 1000 steps per estimate.
FAST_MINE = mi.MineSettings(learning_rate=1e-3, batch_size=256, steps=1000, eval_samples=32768)


def test_histogram_correlated_gaussians_within_ten_percent():
    x, y = correlated_gaussians(100_000)
    rng = np.random.default_rng(1)
    # U is a 2-D embedding whose first coordinate carries x; G is y in 32 equally likely classes.
    embeddings = np.stack([x, rng.normal(size=x.size)], axis=1)
    estimate = mi.histogram_mutual_information(embeddings, mi.quantile_bins(y, 32))
    assert estimate == pytest.approx(GAUSSIAN_MI, rel=0.10)


def test_histogram_separating_embedding_gives_log_k():
    for k in (2, 4, 10):
        embeddings, labels = separated_clusters(20_000, k)
        assert mi.histogram_mutual_information(embeddings, labels) == pytest.approx(math.log(k), rel=0.02)


def test_histogram_independent_noise_is_about_zero_and_multi_factor_shape():
    rng = np.random.default_rng(2)
    embeddings = rng.normal(size=(20_000, 2))
    factors = rng.integers(0, 6, size=(20_000, 3))
    values = mi.histogram_mutual_information(embeddings, factors)
    assert values.shape == (3,)
    assert np.all(np.abs(values) < 0.05)
    # Miller-Madow removes most of the plug-in estimator's positive bias.
    corrected = mi.histogram_mutual_information(embeddings, factors, miller_madow=True)
    assert np.all(np.abs(corrected) < np.abs(values))


def test_histogram_large_noise_drives_estimate_to_zero():
    embeddings, labels = separated_clusters(20_000, 4)
    sweep = mi.histogram_sigma_sweep(embeddings, labels, [0.0, 0.7, 100.0], seed=3)
    assert sweep.shape == (3, 1)
    assert sweep[0, 0] == pytest.approx(math.log(4), rel=0.02)
    assert sweep[0, 0] > sweep[1, 0] > sweep[2, 0]
    assert sweep[2, 0] < 0.05


def test_histogram_entropy_and_binning():
    assert mi.entropy_from_counts(np.array([5, 5, 0, 5, 5])) == pytest.approx(math.log(4))
    edges = mi.histogram_edges(np.random.default_rng(0).normal(size=(10_000, 2)))
    # sqrt(10000) = 100 bins in all: 10 per axis.
    assert [len(edge) - 1 for edge in edges] == [10, 10]
    classes = mi.quantile_bins(np.arange(100.0), 4)
    assert np.bincount(classes).tolist() == [25, 25, 25, 25]


def test_mine_correlated_gaussians_within_ten_percent():
    x, y = correlated_gaussians(20_000)
    estimate = mi.mine_mutual_information(x[:, None], y, sigma=0.0, settings=FAST_MINE, seed=1)
    assert isinstance(estimate, float)
    assert estimate == pytest.approx(GAUSSIAN_MI, rel=0.10)


def test_mine_separating_independent_and_noise_sweep():
    embeddings, labels = separated_clusters(4000, 4)
    independent = np.random.default_rng(5).integers(0, 4, 4000)
    factors = np.stack([labels, independent], axis=1)
    # One network per factor, restarted for each sigma; sigma = 30 dwarfs the spread (about 1).
    sweep = mi.mine_sigma_sweep(embeddings, factors, [0.0, 30.0], FAST_MINE, seed=0)
    assert sweep.shape == (2, 2)
    assert sweep[0, 0] == pytest.approx(math.log(4), rel=0.10)
    assert abs(sweep[0, 1]) < 0.05
    assert np.all(np.abs(sweep[1]) < 0.05)


def test_mine_bias_corrected_moving_average_converges():
    embeddings, labels = separated_clusters(4000, 2)
    settings = mi.MineSettings(learning_rate=1e-3, steps=500, eval_samples=16384, moving_average=0.05)
    estimate = mi.mine_mutual_information(embeddings, labels, sigma=0.0, settings=settings, seed=0)
    assert estimate == pytest.approx(math.log(2), rel=0.10)


def test_paper_defaults_and_sigma_grid():
    settings = mi.MineSettings()
    assert (settings.learning_rate, settings.batch_size, settings.steps, settings.eval_samples) == (
        3e-4, 256, 20_000, 256_000,
    )
    embeddings = np.random.default_rng(0).normal(scale=3.0, size=(500, 8))
    grid = mi.sigma_grid(embeddings, length_scale=1.0)
    assert grid.shape == (mi.PAPER_NUM_SIGMAS,)
    assert np.all(np.diff(np.log(grid)) == pytest.approx(np.log(grid[1] / grid[0])))
    assert grid[0] < 1.0 < 3.0 < grid[-1]


def test_bad_inputs_raise_clear_errors():
    with pytest.raises(ValueError, match="same|N ="):
        mi.histogram_mutual_information(np.zeros((10, 2)), np.zeros(9))
    with pytest.raises(ValueError, match="D <= 3"):
        mi.histogram_mutual_information(np.zeros((10, 8)), np.zeros(10))
    with pytest.raises(ValueError, match="steps"):
        mi.mine_mutual_information(np.zeros((10, 2)), np.zeros(10), settings=mi.MineSettings(steps=0))
    with pytest.raises(ValueError, match="sigma"):
        mi.mine_sigma_sweep(np.zeros((10, 2)), np.zeros(10), [-1.0], FAST_MINE)
    with pytest.raises(ValueError, match="NaN"):
        mi.histogram_mutual_information(np.full((10, 2), np.nan), np.zeros(10))
