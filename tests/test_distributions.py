"""The shared probability terms (abc_tf.methods.distributions) against NumPy in float64."""

from __future__ import annotations

import numpy as np

from abc_tf.methods.distributions import bernoulli_log_likelihood, gaussian_kl
from tolerance_helpers import rounding_rtol


def test_gaussian_kl_to_the_standard_normal_matches_numpy():
    rng = np.random.default_rng(0)
    mean = rng.normal(size=(4, 3)).astype(np.float32)
    log_variance = rng.uniform(-2.0, 1.0, size=(4, 3)).astype(np.float32)
    variance = np.exp(log_variance.astype(np.float64))
    expected = 0.5 * np.sum(variance + mean.astype(np.float64) ** 2 - 1.0 - log_variance, axis=-1)
    # The sum cancels near v = 1: its float32 roundings (exp, 3 terms of 3 dimensions) are on the
    # terms' sizes, not on the result's.
    size = 0.5 * np.sum(variance + mean.astype(np.float64) ** 2 + 1.0 + np.abs(log_variance), axis=-1)
    np.testing.assert_allclose(
        gaussian_kl(mean, log_variance), expected, rtol=0, atol=rounding_rtol(8) * size.max()
    )
    np.testing.assert_allclose(gaussian_kl(np.zeros((1, 3), np.float32), np.zeros((1, 3), np.float32)), [0.0])


def test_bernoulli_log_likelihood_of_logits_matches_numpy():
    rng = np.random.default_rng(1)
    images = rng.uniform(size=(3, 2, 2, 1)).astype(np.float32)
    logits = rng.normal(scale=3.0, size=(3, 2, 2, 1)).astype(np.float32)
    x, z = images.astype(np.float64), logits.astype(np.float64)
    p = 1.0 / (1.0 + np.exp(-z))
    expected = np.sum((x * np.log(p) + (1 - x) * np.log(1 - p)).reshape(3, -1), axis=1)
    # One sign per term (log p <= 0): 4 terms, each a few float32 roundings of its own size.
    np.testing.assert_allclose(bernoulli_log_likelihood(images, logits), expected, rtol=rounding_rtol(16))
