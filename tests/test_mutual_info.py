"""Known-answer tests of the mutual information estimators (SPEC.md section 4)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import tensorflow as tf

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


def test_moving_average_is_debiased_from_a_zero_start():
    # Closed form: the de-biased average of a constant series is that constant at every step;
    # after x_1, x_2 it is ((1 - a) a x_1 + a x_2) / (1 - (1 - a)^2).
    alpha = 0.01
    log_average = tf.fill([2], -np.inf)
    for step in range(1, 4):
        log_average, debiased = mi.debiased_log_average(log_average, tf.math.log([1.0, 5.0]), alpha, step)
        np.testing.assert_allclose(np.exp(debiased.numpy()), [1.0, 5.0], rtol=1e-5)
    x1, x2 = 2.0, 7.0
    log_average, _ = mi.debiased_log_average(tf.fill([1], -np.inf), tf.math.log([x1]), alpha, 1)
    _, debiased = mi.debiased_log_average(log_average, tf.math.log([x2]), alpha, 2)
    expected = ((1 - alpha) * alpha * x1 + alpha * x2) / (1 - (1 - alpha) ** 2)
    np.testing.assert_allclose(np.exp(debiased.numpy()), [expected], rtol=1e-5)


def test_moving_average_first_step_equals_the_plain_gradient():
    # After one step the de-biased average is that batch's own E_marginal[exp T], so the
    # bias-corrected gradient equals the plain Donsker-Varadhan gradient: the same first step.
    embeddings, labels = separated_clusters(512, 2)
    learning_rate = 1e-2
    steps = []
    for moving_average in (None, 0.01):
        settings = mi.MineSettings(learning_rate=learning_rate, batch_size=64, steps=1, eval_samples=64,
                                   moving_average=moving_average)
        estimator = mi.MineEstimator(512, 2, 1, settings, seed=3)
        estimator.set_data(embeddings, labels)
        estimator.estimate(0.0, seed=4)
        steps.append(np.concatenate([(v.numpy() - v0).ravel() for v, v0 in zip(estimator.variables, estimator.initial_values)]))
    plain, averaged = steps
    # Adam's first step is learning_rate * g / (|g| + 1e-7): about +-learning_rate wherever the
    # gradient is well above 1e-7. There, a gradient of another direction flips or shrinks the
    # step; rounding cannot. (Where g is near 1e-7, rounding alone moves the step.)
    clear = np.abs(plain) > 0.9 * learning_rate
    assert clear.mean() > 0.5
    np.testing.assert_allclose(averaged[clear], plain[clear], rtol=0, atol=1e-5)


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
