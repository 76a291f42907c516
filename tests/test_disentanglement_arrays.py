"""MIG, DCI and SAP on arrays (abc_tf/evaluation/estimators/disentanglement_arrays.py): small cases
computed by hand, the library's histogram bins, SAP's continuous matrix, bad inputs. The sanity
cases through all_scores: tests/test_disentanglement.py."""

from __future__ import annotations

import math

import numpy as np
import pytest

from abc_tf.evaluation.estimators import disentanglement_arrays as arrays


def test_mig_of_a_two_factor_example_by_hand():
    # Factors (a, b) over the 4 points of {0,1}^2; codes z0 = a, z1 = a AND b.
    a = np.array([0, 0, 1, 1] * 25)
    b = np.array([0, 1, 0, 1] * 25)
    codes = np.stack([a, a & b], axis=1).astype(float)
    # I(a; z0) = ln 2, I(b; z0) = 0; I(a; z1) = I(b; z1) = H(z1) - ln 2 / 2 with P(z1=1) = 1/4.
    h_z1 = -(0.25 * math.log(0.25) + 0.75 * math.log(0.75))
    shared = h_z1 - math.log(2) / 2
    result = arrays.mig(codes, np.stack([a, b], axis=1), factor_names=["a", "b"])
    assert result["per_factor"]["a"] == pytest.approx((math.log(2) - shared) / math.log(2))
    assert result["per_factor"]["b"] == pytest.approx(shared / math.log(2))
    assert result["mig"] == pytest.approx(0.5)
    # Rescaling, shifting and flipping a code does not move its bins' partition.
    assert arrays.mig(codes * [-4.0, 0.1] + 3.0, np.stack([a, b], axis=1))["mig"] == pytest.approx(0.5)


def test_discretize_matches_the_library_histogram_bins():
    codes = np.random.default_rng(0).normal(size=(500, 3))
    expected = np.stack([np.digitize(c, np.histogram(c, 20)[1][:-1]) - 1 for c in codes.T], axis=1)
    np.testing.assert_array_equal(arrays.discretize(codes, 20), expected)


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
    assert arrays.dci_disentanglement(importance) == pytest.approx(disentanglement, rel=1e-6)
    assert arrays.dci_completeness(importance) == pytest.approx(completeness, rel=1e-6)


def test_dci_of_zero_importance_is_zero():
    assert arrays.dci_disentanglement(np.zeros((10, 10))) == pytest.approx(0.0, abs=1e-7)
    assert arrays.dci_completeness(np.zeros((10, 10))) == pytest.approx(0.0, abs=1e-7)


def test_sap_gap_of_a_given_score_matrix():
    scores = np.array([[0.9, 0.1], [0.5, 0.2], [0.1, 0.7]])
    np.testing.assert_allclose(arrays.sap_gaps(scores), [0.9 - 0.5, 0.7 - 0.2])
    np.testing.assert_allclose(arrays.sap_gaps(np.array([[0.3, 0.6]])), [0.3, 0.6])  # one code: gap to 0


def test_sap_continuous_matrix_is_squared_correlation():
    rng = np.random.default_rng(0)
    factors = rng.integers(0, 5, size=(200, 2))
    codes = np.stack([factors[:, 0] + rng.normal(size=200), rng.normal(size=200), np.zeros(200)], axis=1)
    matrix = arrays.sap_score_matrix(codes, factors, continuous_factors=True)
    for j in range(2):
        for i in range(2):
            assert matrix[j, i] == pytest.approx(np.corrcoef(codes[:, j], factors[:, i])[0, 1] ** 2)
    np.testing.assert_array_equal(matrix[2], 0.0)  # a constant code scores 0


def test_sap_with_continuous_factors_scores_the_identity_near_one_and_noise_near_zero():
    # The library's identity test uses continuous factors (squared correlation); discrete
    # factors' 1-D SVMs score far below 1 (tests/test_disentanglement.py).
    rng = np.random.default_rng(0)
    factors = np.stack([rng.integers(0, s, 600) for s in (4, 5, 3)], axis=1)
    identity = factors + 0.01 * rng.normal(size=factors.shape)
    assert arrays.sap(identity, factors, continuous_factors=True)["sap"] > 0.9
    assert arrays.sap(rng.normal(size=(600, 5)), factors, continuous_factors=True)["sap"] < 0.1
    doubled = np.hstack([identity, identity])  # two equally good dimensions per factor: gap 0
    assert arrays.sap(doubled, factors, continuous_factors=True)["sap"] < 0.1


def test_bad_inputs_raise():
    codes = np.random.default_rng(0).normal(size=(20, 2))
    factors = np.stack([np.arange(20) % 2, np.zeros(20, int)], axis=1)
    with pytest.raises(ValueError, match="single value"):
        arrays.mig(codes, factors, factor_names=["a", "constant"])
    with pytest.raises(ValueError, match="shape"):
        arrays.mig(codes, factors[:10])
    with pytest.raises(ValueError, match="NaN"):
        arrays.mig(np.full((20, 2), np.nan), factors)
    with pytest.raises(ValueError, match="integer"):
        arrays.mig(codes, factors + 0.5)
    with pytest.raises(ValueError, match="test"):
        arrays.sap(codes, np.stack([np.arange(20) % 2, np.arange(20) % 3], axis=1))
    with pytest.raises(ValueError, match="2 factor names for 1"):
        arrays.names_of(["a", "b"], 1)


def test_dci_histogram_trees_find_the_importances_the_exact_trees_find():
    # Each factor is one code dimension plus a little noise; four more dimensions are noise.
    rng = np.random.default_rng(0)
    factors = np.stack([rng.integers(0, 4, 600), rng.integers(0, 3, 600)], axis=1)
    codes = np.concatenate(
        [factors + 0.2 * rng.normal(size=factors.shape), rng.normal(size=(600, 4))], axis=1
    )
    scores = {
        trees: arrays.dci(
            codes[:400], factors[:400], codes[400:], factors[400:], seed=0, n_jobs=1, trees=trees
        )
        for trees in arrays.DCI_TREES
    }
    importance, _, _ = arrays.dci_importance(
        codes[:400], factors[:400], codes[400:], factors[400:], seed=0, n_jobs=1, trees="histogram"
    )
    assert importance.shape == (6, 2)
    np.testing.assert_allclose(importance.sum(axis=0), 1.0, rtol=1e-9)
    assert np.argmax(importance, axis=0).tolist() == [0, 1]
    for key in ("disentanglement", "completeness", "informativeness_test"):
        assert scores["exact"][key] > 0.7 and scores["histogram"][key] > 0.7
        assert scores["histogram"][key] == pytest.approx(scores["exact"][key], abs=0.1)
    with pytest.raises(ValueError, match="Unknown DCI trees 'forest'"):
        arrays.dci(codes, factors, codes, factors, trees="forest")
