"""Known-answer tests of the MINE estimator and its bias-corrected moving average
(docs/PAPERS.md section 4)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import tensorflow as tf

from abc_tf.evaluation.estimators import mine
from mi_cases import GAUSSIAN_MI, correlated_gaussians, separated_clusters

# Small but convergent MINE settings: one compiled loop of 1000 steps per estimate.
FAST_MINE = mine.MineSettings(learning_rate=1e-3, batch_size=256, steps=1000, eval_samples=32768)


@pytest.mark.slow
def test_mine_correlated_gaussians_within_ten_percent():
    x, y = correlated_gaussians(20_000)
    estimate = mine.mine_mutual_information(x[:, None], y, sigma=0.0, settings=FAST_MINE, seed=1)
    assert isinstance(estimate, float)
    assert estimate == pytest.approx(GAUSSIAN_MI, rel=0.10)


@pytest.mark.slow
def test_mine_separating_independent_and_noise_sweep():
    embeddings, labels = separated_clusters(4000, 4)
    independent = np.random.default_rng(5).integers(0, 4, 4000)
    factors = np.stack([labels, independent], axis=1)
    # One network per factor, restarted for each sigma; sigma = 30 dwarfs the spread (about 1).
    sweep = mine.mine_sigma_sweep(embeddings, factors, [0.0, 30.0], FAST_MINE, seed=0)
    assert sweep.shape == (2, 2)
    assert sweep[0, 0] == pytest.approx(math.log(4), rel=0.10)
    assert abs(sweep[0, 1]) < 0.05
    assert np.all(np.abs(sweep[1]) < 0.05)


@pytest.mark.slow
def test_mine_bias_corrected_moving_average_converges():
    embeddings, labels = separated_clusters(4000, 2)
    settings = mine.MineSettings(learning_rate=1e-3, steps=500, eval_samples=16384, moving_average=0.05)
    estimate = mine.mine_mutual_information(embeddings, labels, sigma=0.0, settings=settings, seed=0)
    assert estimate == pytest.approx(math.log(2), rel=0.10)


def test_moving_average_is_debiased_from_a_zero_start():
    # Closed form: the de-biased average of a constant series is that constant at every step;
    # after x_1, x_2 it is ((1 - a) a x_1 + a x_2) / (1 - (1 - a)^2).
    alpha = 0.01
    # float32 against float64: 1 - 0.99^t cancels 100-fold at t = 1, so 0.99's float32 rounding
    # (1e-8) becomes 1e-6 of the result; the logs, the log-sum-exp of 2 and exp round about 4 times
    # on magnitudes < 5: rounding_rtol(4, condition=5) = 4.8e-6. 1e-5 holds both.
    log_average = tf.fill([2], -np.inf)
    for step in range(1, 4):
        log_average, debiased = mine.debiased_log_average(log_average, tf.math.log([1.0, 5.0]), alpha, step)
        np.testing.assert_allclose(np.exp(debiased.numpy()), [1.0, 5.0], rtol=1e-5)
    x1, x2 = 2.0, 7.0
    log_average, _ = mine.debiased_log_average(tf.fill([1], -np.inf), tf.math.log([x1]), alpha, 1)
    _, debiased = mine.debiased_log_average(log_average, tf.math.log([x2]), alpha, 2)
    expected = ((1 - alpha) * alpha * x1 + alpha * x2) / (1 - (1 - alpha) ** 2)
    np.testing.assert_allclose(np.exp(debiased.numpy()), [expected], rtol=1e-5)


def test_moving_average_first_step_equals_the_plain_gradient():
    # After one step the de-biased average is that batch's own E_marginal[exp T], so the
    # bias-corrected gradient equals the plain Donsker-Varadhan gradient: the same first step.
    embeddings, labels = separated_clusters(512, 2)
    learning_rate = 1e-2
    steps = []
    for moving_average in (None, 0.01):
        settings = mine.MineSettings(
            learning_rate=learning_rate,
            batch_size=64,
            steps=1,
            eval_samples=64,
            moving_average=moving_average,
        )
        estimator = mine.MineEstimator(512, 2, 1, settings, seed=3)
        estimator.set_data(embeddings, labels)
        estimator.estimate(0.0, seed=4)
        steps.append(
            np.concatenate(
                [(v.numpy() - v0).ravel() for v, v0 in zip(estimator.variables, estimator.initial_values)]
            )
        )
    plain, averaged = steps
    # Adam's first step is learning_rate * g / (|g| + 1e-7): about +-learning_rate wherever the
    # gradient is well above 1e-7. There, a gradient of another direction flips or shrinks the
    # step; rounding cannot. (Where g is near 1e-7, rounding alone moves the step.)
    clear = np.abs(plain) > 0.9 * learning_rate
    assert clear.mean() > 0.5
    np.testing.assert_allclose(averaged[clear], plain[clear], rtol=0, atol=1e-5)


@pytest.mark.slow
def test_a_process_reuses_one_estimator_per_shape_and_it_estimates_as_a_new_one():
    embeddings, labels = separated_clusters(256, 2)
    other = np.random.default_rng(7).normal(size=(256, 2))
    settings = mine.MineSettings(learning_rate=1e-2, batch_size=64, steps=20, eval_samples=256)
    first = mine.mine_mutual_information(embeddings, labels, 0.1, settings, seed=3)
    seed_4 = mine.mine_mutual_information(
        other, labels, 0.3, settings, seed=4
    )  # other data, noise and weights
    reused = mine.estimator_for(256, 2, 1, settings)
    traces = reused._train.experimental_get_tracing_count()
    again = mine.mine_mutual_information(embeddings, labels, 0.1, settings, seed=3)
    assert reused._train.experimental_get_tracing_count() == traces == 1
    # Reset to seed 3's initial weights and a fresh optimizer, it repeats the first estimate
    # exactly (the same ops on the same values), and so does a new estimator of each seed.
    assert again == first
    for seed, data, sigma, value in ((3, embeddings, 0.1, first), (4, other, 0.3, seed_4)):
        fresh = mine.MineEstimator(256, 2, 1, settings, seed=seed)
        fresh.set_data(data, labels)
        assert float(fresh.estimate(sigma, seed * 1000)[0]) == value
        np.testing.assert_array_equal(
            np.concatenate([v.ravel() for v in reused.initial_values_for(seed)]),
            np.concatenate([v.ravel() for v in fresh.initial_values]),
        )


def test_paper_defaults():
    settings = mine.MineSettings()
    assert (settings.learning_rate, settings.batch_size, settings.steps, settings.eval_samples) == (
        3e-4,
        256,
        20_000,
        256_000,
    )


def test_bad_inputs_raise_clear_errors():
    with pytest.raises(ValueError, match="steps"):
        mine.mine_mutual_information(np.zeros((10, 2)), np.zeros(10), settings=mine.MineSettings(steps=0))
    with pytest.raises(ValueError, match="sigma"):
        mine.mine_sigma_sweep(np.zeros((10, 2)), np.zeros(10), [-1.0], FAST_MINE)
    with pytest.raises(ValueError, match="N ="):
        mine.mine_mutual_information(np.zeros((10, 2)), np.zeros(9), settings=FAST_MINE)
