"""Elastic-InfoGAN's measures (abc_tf/evaluation/tasks/digit_clusters.py): NMI and ENT on hand-made
code x digit matrices, 1-NN and k-means on separable features, the classifier's architecture
and cache, and a tiny Elastic-InfoGAN run evaluated."""

from __future__ import annotations

import json
import math
import os

import keras
import numpy as np
import pytest

from abc_tf.runs.experiments import get_preset
from abc_tf.data.mnist import sources as mnist_sources
from abc_tf.evaluation.tasks import digit_clusters, mnist_classifier
from abc_tf.runs import checkpoint_run, training
from abc_tf.runs.run_dir import load_run


def test_a_perfect_code_has_nmi_one_and_ent_zero():
    matrix = np.zeros((10, 10), np.int64)
    matrix[np.arange(10), np.random.default_rng(0).permutation(10)] = 7  # codes in any order
    assert digit_clusters.matrix_nmi(matrix) == pytest.approx(1.0)
    assert digit_clusters.ent(matrix) == 0.0


def test_a_useless_code_has_nmi_zero_and_the_largest_ent():
    matrix = np.full((10, 10), 3)
    assert digit_clusters.matrix_nmi(matrix) == pytest.approx(0.0, abs=1e-12)
    assert digit_clusters.ent(matrix) == pytest.approx(math.log(10))


def test_nmi_and_ent_of_a_small_matrix_worked_by_hand():
    matrix = np.array([[2, 0], [1, 1]])
    # p(c) = (1/2, 1/2), p(d) = (3/4, 1/4); I = sum p(c, d) log p(c, d) / (p(c) p(d)).
    mutual = 0.5 * math.log(0.5 / 0.375) + 0.25 * math.log(0.25 / 0.375) + 0.25 * math.log(0.25 / 0.125)
    h_codes, h_digits = math.log(2), -(0.75 * math.log(0.75) + 0.25 * math.log(0.25))
    # The authors' sklearn (0.20, Python 2.7) normalises by the geometric mean of the entropies.
    assert digit_clusters.matrix_nmi(matrix) == pytest.approx(mutual / math.sqrt(h_codes * h_digits))
    # ENT: the mean over both rows and both columns, as the authors' compute_entropy.
    rows = [0.0, math.log(2)]  # (2, 0), (1, 1)
    cols = [-(2 / 3 * math.log(2 / 3) + 1 / 3 * math.log(1 / 3)), 0.0]  # (2, 1), (0, 1)
    assert digit_clusters.ent(matrix) == pytest.approx(np.mean(rows + cols))
    # An empty row or column (a digit never generated) has no entropy: their scipy gives NaN.
    padded = np.zeros((3, 3), np.int64)
    padded[:2, :2] = matrix
    assert math.isnan(digit_clusters.ent(padded))


def test_count_matrix_counts_pairs():
    matrix = digit_clusters.count_matrix([0, 0, 1, 2, 2, 2], [3, 3, 1, 0, 0, 5], size=6)
    assert (
        matrix[0, 3] == 2
        and matrix[1, 1] == 1
        and matrix[2, 0] == 2
        and matrix[2, 5] == 1
        and matrix.sum() == 6
    )


def test_nearest_neighbour_and_kmeans_on_separable_and_random_features():
    rng = np.random.default_rng(0)
    labels = np.repeat(np.arange(10), 50)
    separable = np.eye(10)[labels] * 10 + rng.normal(size=(500, 10))
    assert digit_clusters.nearest_neighbour_accuracy(separable, labels) == 1.0
    assert digit_clusters.kmeans_nmi(separable, labels) > 0.95
    noise = rng.normal(size=(500, 10))
    assert digit_clusters.nearest_neighbour_accuracy(noise, labels) < 0.25
    assert digit_clusters.kmeans_nmi(noise, labels) < 0.15


def test_the_classifier_is_the_authors_small_cnn():
    model = digit_classifier_model = mnist_classifier.build_classifier()
    # conv 20 5x5 (520), conv 50 5x5 (25,050), FC 500 on 4x4x50 (400,500), FC 10 (5,010).
    assert digit_classifier_model.count_params() == 520 + 25_050 + 400_500 + 5_010
    assert model.output_shape == (None, 10)


def test_the_code_grid_shows_each_code_with_the_same_noise():
    def echo(inputs):  # "generates" an image whose pixels say its code and its first noise value
        code = keras.ops.cast(keras.ops.argmax(inputs[:, -10:], axis=1), "float32")[:, None, None, None]
        noise = keras.ops.abs(inputs[:, :1])[:, :, None, None]
        return keras.ops.ones_like(keras.ops.zeros((keras.ops.shape(inputs)[0], 28, 28, 1))) * (
            0.05 * code + 0.001 * noise
        )

    generator = keras.Sequential([keras.Input((72,)), keras.layers.Lambda(echo)])
    grid = digit_clusters.code_grid(generator, columns=3, seed=0, num_codes=10)
    assert grid.shape == (280, 84)
    cells = grid[::28, ::28]  # one pixel per (code, column)
    # float32 0.05 k + 0.001 |noise|: 3 roundings of values < 0.5 per cell, 2e-7 between two.
    np.testing.assert_allclose(cells[:, 0] - cells[0, 0], 0.05 * np.arange(10), atol=1e-5)
    # The same noise in every row: each row differs from row 0 by its code alone.
    np.testing.assert_allclose(
        cells - cells[0], np.broadcast_to((0.05 * np.arange(10))[:, None], cells.shape), atol=1e-5
    )


@pytest.mark.slow
def test_a_tiny_run_is_evaluated_and_the_classifier_cached(tmp_path, small_mnist, monkeypatch):
    monkeypatch.setattr(mnist_classifier, "CLASSIFIER_EPOCHS", 1)
    path = str(tmp_path / "mnist.npz")
    np.savez(path, **small_mnist)
    # A plain graph: the preset's XLA compile takes seconds on a CPU (tests/test_methods.py compiles it).
    config = get_preset("mnist_elastic_infogan_quick").replace(
        path=path, log_every=2, batch_size=16, class_split=1, jit_compile=False, steps=4
    )
    training.train(config, str(tmp_path / "run"), verbose=0)
    run = load_run(str(tmp_path / "run"))
    cache = str(tmp_path / "cache")
    result = digit_clusters.evaluate_run(run, str(tmp_path / "eval"), per_code=6, cache_dir=cache)
    assert 0.0 <= result["classifier"]["test_accuracy"] <= 1.0 and os.path.isfile(
        result["classifier"]["file"]
    )
    generated = result["generated"]
    assert np.asarray(generated["code_digit_matrix"]).sum() == 60 and 0 <= generated["nmi"] <= 1
    # ENT is NaN exactly when some digit was never made (a tiny run's classifier may miss some).
    assert math.isnan(generated["ent"]) == bool(generated["digits_never_made"])
    assert math.isnan(generated["ent"]) or 0 <= generated["ent"] <= math.log(10) + 1e-9
    found = result["nearest_neighbour"]  # the supplement's 1-NN of Q on the split's images
    assert found["images"] == len(
        mnist_sources.load_mnist(config).y_train
    )  # split 1 scaled to the small pool
    assert (
        0 <= found["accuracy"] <= 1 and 0 <= found["untrained"] <= 1 and found["paper_random_init"] == 0.4865
    )
    assert set(result["representation"]) == {"nearest_neighbour_accuracy", "kmeans_nmi", "num_images"}
    assert result["class_split"]["class_split"] == 1 and len(result["prior"]["prior"]) == 10
    assert result["figures"] == [
        digit_clusters.FIGURE,
        digit_clusters.SAMPLES_FIGURE,
        digit_clusters.PRIOR_FIGURE,
    ]
    for figure in result["figures"]:
        assert os.path.getsize(tmp_path / "eval" / figure) > 0
    headline = result["headline"]
    np.testing.assert_equal(
        [headline["NMI (code vs digit)"], headline["ENT"]], [generated["nmi"], generated["ent"]]
    )  # NaN too
    assert headline["largest prior"] == max(result["prior"]["prior"])
    assert headline["1-NN (Q, split's images)"] == found["accuracy"]
    assert headline["prior L1 to truth"] == pytest.approx(
        np.abs(np.sort(result["prior"]["prior"]) - np.sort(result["prior"]["true_proportions"])).sum()
    )
    json.dumps(result)  # goes into metrics.json
    # The second evaluation loads the cached classifier instead of training one.
    monkeypatch.setattr(
        mnist_classifier, "train_classifier", lambda *args, **kwargs: pytest.fail("retrained")
    )
    again = digit_clusters.evaluate_run(run, str(tmp_path / "eval2"), per_code=6, cache_dir=cache)
    assert again["classifier"]["test_accuracy"] == result["classifier"]["test_accuracy"]
    # A checkpoint's evaluation (learning curves) reports the prior of its own step, not the run's last.
    early = checkpoint_run.load_checkpoint_run(str(tmp_path / "run"), 2)
    at_two = digit_clusters.evaluate_run(early, str(tmp_path / "eval3"), per_code=6, cache_dir=cache)["prior"]
    assert result["prior"]["step"] == 4 and [entry["step"] for entry in result["prior"]["history"]] == [2, 4]
    assert at_two["step"] == 2 and at_two["history"] == result["prior"]["history"][:1]
    assert at_two["prior"] == at_two["history"][0]["prior"]
