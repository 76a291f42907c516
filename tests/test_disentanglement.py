"""Disentanglement scores (abc_tf/evaluation/disentanglement.py; PEERS.md section 4).

The sanity cases of disentanglement_lib's own tests (identity representation near 1, random or
zero near 0 / chance, duplicated codes), invariance to permuting and rescaling the codes, and
small cases computed by hand. Point counts are small so the module runs in seconds.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from abc_tf.evaluation import disentanglement as dis

SIZES = (4, 5, 3)
NAMES = ("colour", "size", "shape")
SMALL = dis.ScoreSettings(
    beta_vae_num_train=300,
    beta_vae_num_eval=200,
    factor_vae_num_train=300,
    factor_vae_num_eval=200,
    factor_vae_num_variance_estimate=600,
    num_train=600,
    num_test=300,
    dci_num_train=600,
    n_jobs=1,
)


@dataclasses.dataclass
class NoisyLinear:
    """Codes = ((factors + noise * N(0, 1)) @ mixing) * scale + shift; counts the codes drawn."""

    mixing: np.ndarray
    scale: np.ndarray | float = 1.0
    shift: np.ndarray | float = 0.0
    noise: float = 0.01
    sizes: tuple[int, ...] = SIZES
    factor_names: tuple[str, ...] = NAMES
    drawn: int = 0
    largest_call: int = 0

    def sample_factors(self, n, rng):
        return np.stack([rng.integers(0, s, n) for s in self.sizes], axis=1)

    def codes(self, factors, rng):
        self.drawn += factors.shape[0]
        self.largest_call = max(self.largest_call, factors.shape[0])
        noisy = factors + self.noise * rng.normal(size=factors.shape)
        return (noisy @ self.mixing) * self.scale + self.shift


class RandomCodes(NoisyLinear):
    """Codes independent of the factors: N(0, 1) in d dimensions."""

    def codes(self, factors, rng):
        self.drawn += factors.shape[0]
        return rng.normal(size=(factors.shape[0], self.mixing.shape[1]))


def identity() -> NoisyLinear:
    return NoisyLinear(np.eye(len(SIZES)))


ENTANGLED = np.array([[1.0, 0.6, 0.0], [0.3, 1.0, 0.5], [0.0, 0.4, 1.0]])


def permuted_rescaled(mixing: np.ndarray, noise: float) -> NoisyLinear:
    # Columns permuted, signs flipped, scaled by 0.5..3 and shifted: std stays above FactorVAE's 0.05.
    return NoisyLinear(
        mixing[:, [2, 0, 1]], scale=np.array([-3.0, 0.5, 2.0]), shift=np.array([7.0, -1.0, 0.25]), noise=noise
    )


def flat(results: dict) -> dict[str, float]:
    return {
        f"{score}.{key}": value
        for score, values in results.items()
        for key, value in values.items()
        if key != "per_factor"
    }


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
    # cannot carve out the middle values of a factor: well above random, far from 1 ...
    assert s["sap"]["sap"] > 0.1
    # ... its identity test uses continuous factors (squared correlation), as here.
    train_codes, train_factors = dis.draw(identity(), 600, seed=0)
    assert dis.sap(train_codes, train_factors, continuous_factors=True)["sap"] > 0.9


def test_random_codes_score_near_zero_or_chance():
    s = dis.all_scores(RandomCodes(np.zeros((3, 5))), SMALL, seed=4)
    chance = 1 / len(SIZES)
    assert abs(s["beta_vae"]["eval_accuracy"] - chance) < 0.12
    assert abs(s["factor_vae"]["eval_accuracy"] - chance) < 0.12
    assert s["mig"]["mig"] < 0.1
    assert s["dci"]["disentanglement"] < 0.2 and s["dci"]["completeness"] < 0.2
    assert s["sap"]["sap"] < 0.1
    codes, factors = dis.draw(RandomCodes(np.zeros((3, 5))), 600, seed=1)
    assert dis.sap(codes, factors, continuous_factors=True)["sap"] < 0.1


def test_zero_representation():
    zero = NoisyLinear(np.zeros((3, 4)), noise=0.0)
    s = dis.all_scores(zero, SMALL, seed=5, scores=["factor_vae", "mig", "sap"])
    # Every dimension collapsed: FactorVAE scores 0 with no active dimension, like the library.
    assert s["factor_vae"] == {"train_accuracy": 0.0, "eval_accuracy": 0.0, "num_active_dims": 0}
    assert s["mig"]["mig"] == 0.0
    assert s["sap"]["sap"] == 0.0


@pytest.mark.parametrize("mixing, noise", [(np.eye(3), 0.01), (ENTANGLED, 0.5)], ids=["identity", "entangled"])
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
# Hand-computed cases


def test_mig_of_a_two_factor_example_by_hand():
    # Factors (a, b) over the 4 points of {0,1}^2; codes z0 = a, z1 = a AND b.
    a = np.array([0, 0, 1, 1] * 25)
    b = np.array([0, 1, 0, 1] * 25)
    codes = np.stack([a, a & b], axis=1).astype(float)
    # I(a; z0) = ln 2, I(b; z0) = 0; I(a; z1) = I(b; z1) = H(z1) - ln 2 / 2 with P(z1=1) = 1/4.
    h_z1 = -(0.25 * math.log(0.25) + 0.75 * math.log(0.75))
    shared = h_z1 - math.log(2) / 2
    result = dis.mig(codes, np.stack([a, b], axis=1), factor_names=["a", "b"])
    assert result["per_factor"]["a"] == pytest.approx((math.log(2) - shared) / math.log(2))
    assert result["per_factor"]["b"] == pytest.approx(shared / math.log(2))
    assert result["mig"] == pytest.approx(0.5)
    # Rescaling, shifting and flipping a code does not move its bins' partition.
    assert dis.mig(codes * [-4.0, 0.1] + 3.0, np.stack([a, b], axis=1))["mig"] == pytest.approx(0.5)


def test_discretize_matches_the_library_histogram_bins():
    codes = np.random.default_rng(0).normal(size=(500, 3))
    expected = np.stack(
        [np.digitize(c, np.histogram(c, 20)[1][:-1]) - 1 for c in codes.T], axis=1
    )
    np.testing.assert_array_equal(dis.discretize(codes, 20), expected)


@pytest.mark.parametrize(
    "importance, disentanglement, completeness",
    [
        (np.diag([5.0] * 5), 1.0, 1.0),
        (np.array([[1.0, 0.0], [0.0, 1.0], [0.0, 0.0]]), 1.0, 1.0),  # an empty code
        (np.vstack([np.diag([5.0] * 5)] * 2), 1.0, 1 - math.log(2) / math.log(10)),  # redundant codes
        (np.diag([5.0] * 5)[:2], 1.0, 1.0),  # missed factors
        (np.hstack([np.diag([5.0] * 5)] * 2), 1 - math.log(2) / math.log(10), 1.0),  # one code, two factors
        # By hand: code 0 spreads evenly over both factors (1 - H = 0), code 1 serves factor 1
        # only (1); both hold half the importance. Factor 0 reads code 0 only (1); factor 1
        # reads the codes 1 : 2, 1 - H_2(1/3, 2/3), and holds 3/4 of the importance.
        (
            np.array([[1.0, 1.0], [0.0, 2.0]]),
            0.5,
            0.25 + 0.75 * (1 + (1 / 3) * math.log2(1 / 3) + (2 / 3) * math.log2(2 / 3)),
        ),
    ],
)
def test_dci_of_given_importance_matrices(importance, disentanglement, completeness):
    assert dis.dci_disentanglement(importance) == pytest.approx(disentanglement, rel=1e-6)
    assert dis.dci_completeness(importance) == pytest.approx(completeness, rel=1e-6)


def test_dci_of_zero_importance_is_zero():
    assert dis.dci_disentanglement(np.zeros((10, 10))) == pytest.approx(0.0, abs=1e-7)
    assert dis.dci_completeness(np.zeros((10, 10))) == pytest.approx(0.0, abs=1e-7)


def test_sap_gap_of_a_given_score_matrix():
    scores = np.array([[0.9, 0.1], [0.5, 0.2], [0.1, 0.7]])
    assert dis.sap_gap(scores) == pytest.approx(((0.9 - 0.5) + (0.7 - 0.2)) / 2)
    assert dis.sap_gap(np.array([[0.3, 0.6]])) == pytest.approx(0.45)  # one code: gap to 0


def test_sap_continuous_matrix_is_squared_correlation():
    rng = np.random.default_rng(0)
    factors = rng.integers(0, 5, size=(200, 2))
    codes = np.stack([factors[:, 0] + rng.normal(size=200), rng.normal(size=200), np.zeros(200)], axis=1)
    matrix = dis.sap_score_matrix(codes, factors, continuous_factors=True)
    for j in range(2):
        for i in range(2):
            assert matrix[j, i] == pytest.approx(np.corrcoef(codes[:, j], factors[:, i])[0, 1] ** 2)
    np.testing.assert_array_equal(matrix[2], 0.0)  # a constant code scores 0


def test_majority_vote_classifier_by_hand():
    # votes [factor, dimension]: dimension 0 -> factor 0 (5 > 3), dimension 1 -> factor 1.
    train = np.array([[5, 0], [3, 2]])
    assert dis.majority_vote_accuracy(train) == pytest.approx(7 / 10)
    held_out = np.array([[1, 4], [2, 3]])
    assert dis.majority_vote_accuracy(train, held_out) == pytest.approx((1 + 3) / 10)


def test_factor_vae_votes_of_an_exact_identity():
    source = NoisyLinear(np.eye(3), noise=0.0)
    codes, _ = dis.draw(source, 500, seed=0)
    variances = np.var(codes, axis=0, ddof=1)
    votes = dis.factor_vae_votes(source, 60, 8, variances, np.ones(3, bool), seed=0)
    # Fixing factor y leaves dimension y the only one of zero variance: every vote is diagonal.
    assert votes.sum() == 60 and np.count_nonzero(votes - np.diag(np.diag(votes))) == 0


def test_beta_vae_points_zero_the_fixed_factor():
    features, labels = dis.beta_vae_points(NoisyLinear(np.eye(3), noise=0.0), 40, 16, seed=0)
    assert features.shape == (40, 3) and labels.shape == (40,)
    np.testing.assert_array_equal(features[np.arange(40), labels], 0.0)
    assert np.all(features.sum(axis=1) > 0)


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

    source = identity()
    dis.all_scores(source, dataclasses.replace(SMALL, chunk_size=256), seed=0)
    assert source.drawn == SMALL.codes_drawn()
    assert source.largest_call <= 256


def test_seeded_and_independent_of_which_scores_run(identity_scores):
    alone = dis.all_scores(identity(), SMALL, seed=3, scores=["factor_vae", "sap"])
    assert alone["factor_vae"] == identity_scores["factor_vae"]
    assert alone["sap"] == identity_scores["sap"]


def test_grid_source_and_draw():
    source = dis.GridSource((3, 2), lambda f: f * 2.0)
    assert source.factor_names == ("factor_0", "factor_1")
    codes, factors = dis.draw(source, 50, seed=0, chunk_size=7)
    assert factors.shape == (50, 2) and factors[:, 0].max() <= 2 and factors[:, 1].max() <= 1
    np.testing.assert_array_equal(codes, factors * 2.0)
    with pytest.raises(ValueError):
        dis.GridSource((3, 2), lambda f: f, names=("one",))


def test_bad_inputs_raise():
    codes = np.random.default_rng(0).normal(size=(20, 2))
    factors = np.stack([np.arange(20) % 2, np.zeros(20, int)], axis=1)
    with pytest.raises(ValueError, match="single value"):
        dis.mig(codes, factors, factor_names=["a", "constant"])
    with pytest.raises(ValueError, match="shape"):
        dis.mig(codes, factors[:10])
    with pytest.raises(ValueError, match="NaN"):
        dis.mig(np.full((20, 2), np.nan), factors)
    with pytest.raises(ValueError, match="integer"):
        dis.mig(codes, factors + 0.5)
    with pytest.raises(ValueError, match="test"):
        dis.sap(codes, np.stack([np.arange(20) % 2, np.arange(20) % 3], axis=1))
    with pytest.raises(ValueError, match="Unknown"):
        dis.all_scores(identity(), SMALL, scores=["irs"])
    with pytest.raises(ValueError, match="num_train"):
        dis.all_scores(identity(), dataclasses.replace(SMALL, num_train=1))
