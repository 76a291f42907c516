"""The inputs the information measures share: checks, noise, spread, sweep grid, float32 policy."""

from __future__ import annotations

import keras
import numpy as np
import pytest

from abc_tf.evaluation.estimators import noise


def test_sigma_grid_spans_the_length_scale_and_the_spread():
    embeddings = np.random.default_rng(0).normal(scale=3.0, size=(500, 8))
    assert noise.spread(embeddings) == pytest.approx(3.0, rel=0.05)
    grid = noise.sigma_grid(embeddings, length_scale=1.0)
    assert grid.shape == (noise.PAPER_NUM_SIGMAS,)
    assert np.all(np.diff(np.log(grid)) == pytest.approx(np.log(grid[1] / grid[0])))
    assert grid[0] < 1.0 < 3.0 < grid[-1]
    with pytest.raises(ValueError, match="num >= 2"):
        noise.sigma_grid(embeddings, 1.0, num=1)


def test_add_noise_has_the_asked_scale_and_zero_copies():
    embeddings = np.zeros((20_000, 2))
    noisy = noise.add_noise(embeddings, 0.5, np.random.default_rng(1))
    assert noisy.std() == pytest.approx(0.5, rel=0.02)
    copy = noise.add_noise(embeddings, 0.0, np.random.default_rng(1))
    assert np.array_equal(copy, embeddings) and copy is not embeddings
    with pytest.raises(ValueError, match=">= 0"):
        noise.add_noise(embeddings, -1.0, np.random.default_rng(1))


def test_inputs_are_checked():
    assert noise.as_embeddings(np.arange(3.0)).shape == (3, 1)
    factors, single = noise.as_factors(np.arange(3), 3)
    assert factors.shape == (3, 1) and single
    with pytest.raises(ValueError, match="NaN"):
        noise.as_embeddings(np.array([[0.0], [np.inf]]))
    with pytest.raises(ValueError, match="N = 3"):
        noise.as_factors(np.zeros((4, 2)), 3)


def test_float32_policy_is_restored():
    previous = keras.mixed_precision.global_policy()
    keras.mixed_precision.set_global_policy("mixed_bfloat16")
    try:
        with noise.float32_policy():
            assert keras.layers.Dense(2).dtype_policy.compute_dtype == "float32"
        assert keras.mixed_precision.global_policy().name == "mixed_bfloat16"
    finally:
        keras.mixed_precision.set_global_policy(previous)
