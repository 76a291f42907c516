"""BetaVAE and FactorVAE (abc_tf/evaluation/estimators/disentanglement_sampled.py): their points and votes
by hand, the majority-vote classifier, GridSource and draw. The sanity cases through
all_scores: tests/test_disentanglement.py."""

from __future__ import annotations

import numpy as np
import pytest

from abc_tf.evaluation.estimators import disentanglement_sampled as sampled
from disentanglement_helpers import NoisyLinear


def test_majority_vote_classifier_by_hand():
    # votes [factor, dimension]: dimension 0 -> factor 0 (5 > 3), dimension 1 -> factor 1.
    train = np.array([[5, 0], [3, 2]])
    assert sampled.majority_vote_accuracy(train) == pytest.approx(7 / 10)
    held_out = np.array([[1, 4], [2, 3]])
    assert sampled.majority_vote_accuracy(train, held_out) == pytest.approx((1 + 3) / 10)


def test_factor_vae_votes_of_an_exact_identity():
    source = NoisyLinear(np.eye(3), noise=0.0)
    codes, _ = sampled.draw(source, 500, seed=0)
    variances = np.var(codes, axis=0, ddof=1)
    votes = sampled.factor_vae_votes(source, 60, 8, variances, np.ones(3, bool), seed=0)
    # Fixing factor y leaves dimension y the only one of zero variance: every vote is diagonal.
    assert votes.sum() == 60 and np.count_nonzero(votes - np.diag(np.diag(votes))) == 0


def test_beta_vae_points_zero_the_fixed_factor():
    features, labels = sampled.beta_vae_points(NoisyLinear(np.eye(3), noise=0.0), 40, 16, seed=0)
    assert features.shape == (40, 3) and labels.shape == (40,)
    np.testing.assert_array_equal(features[np.arange(40), labels], 0.0)
    assert np.all(features.sum(axis=1) > 0)


def test_factor_vae_threshold_in_units_of_the_codes_spread():
    # Three dimensions that follow the factors and a fourth that barely varies (its std is 0.02
    # of the first's). Relative to the codes' spread the fourth is collapsed at every overall
    # scale and the score does not change with the scale; the library's absolute threshold
    # prunes all four codes at scale 0.01, the fourth alone at scale 1 and none at scale 10.
    mixing = np.hstack([np.eye(3), np.array([[0.02], [0.0], [0.0]])])
    scales = (0.01, 1.0, 10.0)
    scores = {
        (scale, relative): sampled.factor_vae_score(
            NoisyLinear(mixing, scale=scale),
            batch_size=16,
            num_train=100,
            num_eval=50,
            num_variance_estimate=500,
            prune_relative=relative,
            seed=0,
        )
        for scale in scales
        for relative in (True, False)
    }
    assert all(scores[scale, True] == scores[1.0, True] for scale in scales)
    assert scores[1.0, True]["num_active_dims"] == 3 and scores[1.0, True]["eval_accuracy"] > 0.9
    assert [scores[scale, False]["num_active_dims"] for scale in scales] == [0, 3, 4]
    assert scores[0.01, False]["eval_accuracy"] == 0.0
    assert sampled.code_spread(np.array([1.0, 4.0, 4.0, 7.0])) == pytest.approx(2.0)


# ----------------------------------------------------------------------------------------------
# Interface


def test_grid_source_and_draw():
    source = sampled.GridSource((3, 2), lambda f: f * 2.0)
    assert source.factor_names == ("factor_0", "factor_1")
    codes, factors = sampled.draw(source, 50, seed=0, chunk_size=7)
    assert factors.shape == (50, 2) and factors[:, 0].max() <= 2 and factors[:, 1].max() <= 1
    np.testing.assert_array_equal(codes, factors * 2.0)
    with pytest.raises(ValueError):
        sampled.GridSource((3, 2), lambda f: f, names=("one",))


def test_bad_sources_and_settings_raise():
    with pytest.raises(ValueError, match="batches of at least 2"):
        sampled.factor_vae_score(NoisyLinear(np.eye(3)), batch_size=1)

    class WrongShape(NoisyLinear):
        def codes(self, factors, rng):
            return np.zeros((factors.shape[0] + 1, 3))

    with pytest.raises(ValueError, match=r"source.codes\(...\) has 11 rows where 10 were expected"):
        sampled.draw(WrongShape(np.eye(3)), 10, seed=0)
