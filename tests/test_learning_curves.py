"""abc_tf.evaluation.learning_curves: the measures a curve shows, curve.json and curve.png."""

from __future__ import annotations

import json
import math
import os

import pytest

from abc_tf.evaluation import learning_curves

METRICS = {
    "probe": {"floor_hue": {"accuracy": 0.9, "chance": 0.1}, "shape": {"accuracy": 0.4, "chance": 0.25}},
    "disentanglement": {"scores": {"mig": 0.05, "dci_disentanglement": 0.2}},
    "digit_clusters": {"nearest_neighbour_accuracy": 0.8, "kmeans_nmi": 0.5},
    "method": {
        "headline": {"test ELBO": -150.0, "IWAE log p(x)": float("nan")},
        "knn_accuracy": {"k": 5, "code": {"all": 0.9}, "appearance": {"all": 0.7}},
    },
    "config": {"steps": 100},
}

# The digit-style part of an MNIST evaluation (abc_tf.evaluation.tasks.mnist_style).
DIGIT_STYLE = {
    "trained": {
        "retrieval_row_style_spread": {"slant": 0.6, "thickness": 0.45},
        "style_r2": {
            "slant": {"ridge_within_digit_holdout_digit": 0.65, "ridge_raw_seen_digits": 0.9},
            "ink": {"ridge_within_digit_holdout_digit": 0.5},
        },
    },
    "untrained": {"retrieval_row_style_spread": {"slant": 0.98, "thickness": 0.8}},
}


def test_the_curve_keeps_each_scalar_measure_by_name_and_drops_what_is_not_finite():
    assert learning_curves.curve_measures(METRICS) == {
        "probe floor_hue": 0.9,
        "probe shape": 0.4,
        "mig": 0.05,
        "dci_disentanglement": 0.2,
        "1-NN digit accuracy": 0.8,
        "k-means NMI digit": 0.5,
        "test ELBO": -150.0,
        "kNN digit accuracy (code)": 0.9,
        "kNN digit accuracy (appearance)": 0.7,
    }


def test_a_digit_style_curve_follows_the_retrieval_rows_and_the_held_out_digit_s_style():
    # Supplement L116 (Fig. S7): how a method's retrieval grid changes over training; the
    # untrained network's values are not the run's.
    assert learning_curves.curve_measures(DIGIT_STYLE) == {
        "retrieval row spread slant": 0.6,
        "retrieval row spread thickness": 0.45,
        "style R2 slant (held-out digit)": 0.65,
        "style R2 ink (held-out digit)": 0.5,
    }


def test_curve_json_and_figure_hold_every_step_and_the_paper_s_line(tmp_path):
    points = [(500, {"mig": 0.01, "test ELBO": -170.0}), (1000, {"mig": 0.03})]
    curve = learning_curves.write_curve(points, str(tmp_path), "toy", {"mig": 0.1})
    written = json.load(open(tmp_path / learning_curves.CURVE_JSON))
    assert written == curve
    assert written["steps"] == [500, 1000]
    assert written["measures"] == {"mig": [0.01, 0.03], "test ELBO": [-170.0, None]}
    assert written["references"] == {"mig": 0.1}
    assert os.path.getsize(tmp_path / learning_curves.CURVE_FIGURE) > 0


def test_a_reference_to_a_measure_not_measured_is_refused(tmp_path):
    with pytest.raises(ValueError, match="names ENT, which the evaluation does not measure"):
        learning_curves.write_curve([(1, {"mig": 0.0})], str(tmp_path), "toy", {"ENT": 0.2})


def test_references_parse_from_measure_equals_value():
    assert learning_curves.parse_references(["NMI (code vs digit)=0.889", "ENT=0.213"]) == {
        "NMI (code vs digit)": 0.889,
        "ENT": 0.213,
    }
    for bad in ("ENT", "ENT=high", "=0.2"):
        with pytest.raises(ValueError, match="write MEASURE=VALUE"):
            learning_curves.parse_references([bad])
    assert math.isclose(learning_curves.parse_references(["a=b=1"])["a=b"], 1.0)
