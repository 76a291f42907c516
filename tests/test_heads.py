"""The MINE statistics network and the factor probe (models/heads.py) against their tables
(docs/PAPERS.md section 2)."""

import numpy as np

import models
from model_helpers import dense, trainable_count


def test_mine_statistics_network_matches_table():
    model = models.build("mine", embedding_dim=64)
    assert model.output_shape == (None, 1)
    assert trainable_count(model) == dense(64 + 1, 128) + 2 * dense(128, 128) + dense(128, 1)


def test_probe_matches_table():
    model = models.build("probe", embedding_dim=64, num_classes=10)
    assert model.output_shape == (None, 10)
    assert trainable_count(model) == dense(64, 32) + 2 * dense(32, 32) + dense(32, 10)
    probabilities = model.predict(np.random.default_rng(0).normal(size=(5, 64)), verbose=0)
    np.testing.assert_allclose(
        probabilities.sum(-1), 1.0, rtol=1e-5
    )  # a float32 softmax over 10, summed: rounding_rtol(12) = 3e-6
