"""Disentanglement scores through all_scores and array_scores
(abc_tf/evaluation/estimators/disentanglement.py; docs/PAPERS.md section P4): the sanity cases of
disentanglement_lib's own tests (identity representation near 1, random or zero near 0 / chance,
duplicated codes), invariance to permuting and rescaling the codes, the settings and presets. The
scores' parts: tests/test_disentanglement_arrays.py and tests/test_disentanglement_sampled.py. Point
counts are small so the module runs in seconds.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from abc_tf.evaluation.estimators import disentanglement as dis
from disentanglement_helpers import (
    ENTANGLED,
    NAMES,
    SIZES,
    SMALL,
    NoisyLinear,
    RandomCodes,
    flat,
    identity,
    permuted_rescaled,
)


@pytest.fixture(scope="module")
def identity_scores():
    return dis.all_scores(identity(), SMALL, seed=3)


# ----------------------------------------------------------------------------------------------
# Sanity cases of disentanglement_lib's tests


def test_identity_scores_near_one(identity_scores):
    s = identity_scores
    assert s["beta_vae"]["eval_accuracy"] > 0.95 and s["beta_vae"]["train_accuracy"] > 0.95
    assert s["factor_vae"]["eval_accuracy"] > 0.95 and s["factor_vae"]["num_active_dims"] == 3
    assert s["mig"]["mig"] > 0.9 and set(s["mig"]["per_factor"]) == set(NAMES)
    assert s["dci"]["disentanglement"] > 0.9 and s["dci"]["completeness"] > 0.9
    assert s["dci"]["informativeness_test"] > 0.95
    # SAP with discrete factors (the library's study setting) scores 1-D linear SVMs, which
    # cannot carve out the middle values of a factor: well above random, far from 1 (the
    # library's identity test uses continuous factors: tests/test_disentanglement_arrays.py).
    assert s["sap"]["sap"] > 0.1


def test_random_codes_score_near_zero_or_chance():
    s = dis.all_scores(RandomCodes(np.zeros((3, 5))), SMALL, seed=4)
    chance = 1 / len(SIZES)
    assert abs(s["beta_vae"]["eval_accuracy"] - chance) < 0.12
    assert abs(s["factor_vae"]["eval_accuracy"] - chance) < 0.12
    assert s["mig"]["mig"] < 0.1
    assert s["dci"]["disentanglement"] < 0.2 and s["dci"]["completeness"] < 0.2
    assert s["sap"]["sap"] < 0.1


def test_zero_representation():
    zero = NoisyLinear(np.zeros((3, 4)), noise=0.0)
    s = dis.all_scores(zero, SMALL, seed=5, scores=["factor_vae", "mig", "sap"])
    # Every dimension collapsed: FactorVAE scores 0 with no active dimension, like the library.
    assert s["factor_vae"] == {"train_accuracy": 0.0, "eval_accuracy": 0.0, "num_active_dims": 0}
    assert s["mig"]["mig"] == 0.0
    assert s["sap"]["sap"] == 0.0


@pytest.mark.slow
@pytest.mark.parametrize(
    "mixing, noise", [(np.eye(3), 0.01), (ENTANGLED, 0.5)], ids=["identity", "entangled"]
)
def test_permuted_and_rescaled_codes_give_the_same_scores(mixing, noise):
    # The same factors and noise draws reach both sources, so only the codes' coordinates differ.
    plain = flat(dis.all_scores(NoisyLinear(mixing, noise=noise), SMALL, seed=3))
    other = flat(dis.all_scores(permuted_rescaled(mixing, noise), SMALL, seed=3))
    for key, value in plain.items():
        # scikit-learn's trees split float32 copies of the codes, so rescaling can reorder
        # nearly equal values and move an overfitted tree a little: DCI agrees to 0.02.
        tolerance = 0.02 if key.startswith("dci.") else 1e-9
        assert other[key] == pytest.approx(value, abs=tolerance), key
    if noise > 0.1:  # the entangled case is no saturated 1: the check has teeth
        assert 0.1 < plain["mig.mig"] < 0.9 and 0.1 < plain["dci.disentanglement"] < 0.9


def test_duplicated_codes():
    # The library's duplicated-latent test: z = [v, v]. MIG and SAP see two equally good
    # dimensions per factor (gap 0); DCI stays disentangled, completeness drops to
    # 1 - log 2 / log d.
    doubled = NoisyLinear(np.hstack([np.eye(3), np.eye(3)]), noise=0.0)
    s = dis.all_scores(doubled, SMALL, seed=6, scores=["mig", "dci"])
    assert s["mig"]["mig"] < 0.1
    assert s["dci"]["disentanglement"] > 0.9
    assert s["dci"]["completeness"] == pytest.approx(1 - math.log(2) / math.log(6), abs=0.1)
    codes, factors = dis.draw(doubled, 600, seed=2)
    assert dis.sap(codes, factors, continuous_factors=True)["sap"] < 0.1


# ----------------------------------------------------------------------------------------------
# Interface


def test_library_settings_and_codes_drawn():
    settings = dis.ScoreSettings()
    s = settings
    assert (s.beta_vae_batch_size, s.beta_vae_num_train, s.beta_vae_num_eval) == (64, 10_000, 5_000)
    assert (s.factor_vae_batch_size, s.factor_vae_num_train, s.factor_vae_num_eval) == (64, 10_000, 5_000)
    assert (settings.factor_vae_num_variance_estimate, settings.factor_vae_prune_threshold) == (10_000, 0.05)
    assert (settings.num_train, settings.num_test, settings.mig_num_bins) == (10_000, 5_000, 20)
    assert settings.sap_continuous_factors is False
    assert settings.codes_drawn() == 2 * 64 * 15_000 + 64 * 15_000 + 15_000
    assert settings.dci_num_train == 5_000  # ours, for time (module docstring)
    library = dis.ScoreSettings.disentanglement_lib()
    assert library.standardize is False and library.dci_num_train == 10_000
    # FactorVAE's collapse threshold: in units of the codes' spread (ours), raw in the library's.
    assert settings.factor_vae_prune_relative is True and library.factor_vae_prune_relative is False

    source = identity()
    dis.all_scores(source, dataclasses.replace(SMALL, chunk_size=256), seed=0)
    assert source.drawn == SMALL.codes_drawn()
    assert source.largest_call <= 256


def test_seeded_and_independent_of_which_scores_run(identity_scores):
    alone = dis.all_scores(identity(), SMALL, seed=3, scores=["factor_vae", "sap"])
    assert alone["factor_vae"] == identity_scores["factor_vae"]
    assert alone["sap"] == identity_scores["sap"]


def test_array_scores_equal_all_scores_on_the_same_sets(identity_scores):
    source = identity()
    rng = dis._streams(3)
    train = dis.draw(source, SMALL._num_shared_train(), rng["train"], SMALL.chunk_size)
    test = dis.draw(source, SMALL.num_test, rng["test"], SMALL.chunk_size)
    results = dis.array_scores(train, test, SMALL, seed=3, factor_names=NAMES)
    assert list(results) == ["mig", "dci", "sap"]
    for name in results:
        assert results[name] == identity_scores[name], name
    assert SMALL.num_array_train() == 600
    with pytest.raises(ValueError, match="draw their own observations"):
        dis.array_scores(train, test, SMALL, scores=["beta_vae", "mig"])
    with pytest.raises(ValueError, match=r"\['mig', 'dci'\] need 600 training observations, got 100"):
        dis.array_scores((train[0][:100], train[1][:100]), test, SMALL, scores=["mig", "dci"])
    with pytest.raises(ValueError, match="need a test set"):
        dis.array_scores(train, None, SMALL, scores=["sap"])


def test_presets_and_headline(identity_scores):
    assert dis.ScoreSettings.preset("none") is None
    assert dis.ScoreSettings.preset("full") == dis.ScoreSettings()
    assert dis.ScoreSettings.preset("library") == dis.ScoreSettings.disentanglement_lib()
    fast = dis.ScoreSettings.preset("fast")
    fast.validate()
    assert fast.codes_drawn() == 23_100  # as its docstring states
    with pytest.raises(ValueError, match="Unknown disentanglement preset 'quick'"):
        dis.ScoreSettings.preset("quick")
    numbers = dis.headline(identity_scores)
    assert list(numbers) == [key for key, *_ in dis.HEADLINE]
    assert numbers["dci_completeness"] == identity_scores["dci"]["completeness"]
    assert numbers["beta_vae"] == identity_scores["beta_vae"]["eval_accuracy"]
    assert list(dis.headline({"mig": identity_scores["mig"]})) == ["mig"]


def test_bad_inputs_raise():
    with pytest.raises(ValueError, match="Unknown"):
        dis.all_scores(identity(), SMALL, scores=["irs"])
    with pytest.raises(ValueError, match="num_train"):
        dis.all_scores(identity(), dataclasses.replace(SMALL, num_train=1))
