"""MNIST style evaluation (abc_tf.evaluation.tasks.mnist_style): a whole evaluation of an untrained
encoder writing its figures and metrics; the R^2 of the renderer's true style factors when the data
knows them."""

import json

import keras
import numpy as np
import pytest

import models
from abc_tf.runs import experiments
from abc_tf.data.mnist import formats as mnist_formats
from abc_tf.data.mnist import digits as renderer
from abc_tf.evaluation.tasks import mnist_style
from abc_tf.evaluation.estimators import regression
from mnist_helpers import mnist_config


pytestmark = pytest.mark.slow


@pytest.mark.parametrize(
    "method", [None, "vae"]
)  # ABC's similarity; a method without one (squared Euclidean)
def test_evaluate_mnist_run_writes_figures_and_metrics(tmp_path, method):
    # A small procedural test split stands in for MNIST through an .npz.
    train, test = renderer.procedural_mnist(seed=1, train_size=200, test_size=200)
    path = str(tmp_path / "digits.npz")
    np.savez(path, x_train=train.images, y_train=train.labels, x_test=test.images, y_test=test.labels)
    config = mnist_config(path=path) if method else mnist_config(path=path, set_size=8)
    if method:
        config = experiments.choose(config, method=method)
        assert config.embedding_similarity == "l2sq" and not hasattr(config.method, "similarity")
    keras.utils.set_random_seed(1)
    encoder = models.build("s4", embedding_dim=8)
    metrics = mnist_style.evaluate_mnist_run(encoder, config, str(tmp_path / "eval"), probe_epochs=2)
    for name in ("retrieval.png", "pca.png", mnist_style.METRICS_FILE):
        assert (tmp_path / "eval" / name).is_file()
    written = json.loads((tmp_path / "eval" / mnist_style.METRICS_FILE).read_text())
    assert written["holdout_digit"] == 9 and written["data_source"].startswith("npz:")
    for model in ("trained", "untrained"):
        entry = written[model]
        assert set(entry["style_r2"]) == {"slant", "thickness", "ink", "width"}
        assert "ridge_within_digit_holdout_digit" in entry["style_r2"]["slant"]
        assert "true_style_r2" not in entry  # an .npz has no known style factors
        assert 0.0 <= entry["digit_probe_accuracy"]["noise_at_length_scale"] <= 1.0
        assert np.array(entry["retrieval_grid"]["indices"]).shape == (10, 10)
    assert metrics["trained"]["pca_top2_variance"] <= 1.0
    for entry in (written["trained"], written["untrained"], written["raw_pixels"]):
        assert set(entry["held_out_row_style_spread"]) == {"slant", "thickness"}


def test_held_out_rows_share_a_style_when_the_embedding_is_the_style():
    rng = np.random.default_rng(3)
    labels = np.repeat(np.arange(10), 40)
    measures = {"slant": rng.normal(size=len(labels)), "thickness": rng.normal(size=len(labels))}
    style = np.stack([measures["slant"], measures["thickness"]], axis=1)
    alike = mnist_style.held_out_row_style_spread(style, labels, measures, 9, "l2sq")
    unrelated = mnist_style.held_out_row_style_spread(
        rng.normal(size=(len(labels), 2)), labels, measures, 9, "l2sq"
    )
    # Nearest neighbours in style form rows of one style; unrelated ones rows as varied as the pool.
    assert alike["slant"] < 0.3 and alike["thickness"] < 0.3
    assert 0.7 < unrelated["slant"] < 1.3 and 0.7 < unrelated["thickness"] < 1.3


def pixel_encoder(pixel: int, seed: int) -> keras.Model:
    """A linear encoder [28, 28, 1] -> 4 whose first output is the image's pixel ``pixel``
    (flattened index) and whose others are random mixtures of all pixels."""
    encoder = keras.Sequential(
        [keras.Input((28, 28, 1)), keras.layers.Flatten(), keras.layers.Dense(4, use_bias=False)]
    )
    weights = np.random.default_rng(seed).normal(size=(784, 4)) * 0.01
    weights[:, 0] = 0.0
    weights[pixel, 0] = 1.0
    encoder.set_weights([weights.astype(np.float32)])
    return encoder


def test_true_style_r2_on_procedural_like_data(tmp_path, monkeypatch):
    """With the renderer's style factors known (data.test_style), every factor is scored for
    both encoders; an encoder that reads one factor linearly (coded into a pixel) gets R^2 ~ 1
    for it and ~ 0 for an unrelated factor."""
    rng = np.random.default_rng(0)
    labels = np.repeat(np.arange(10), 40).astype(np.uint8)
    # Each digit's mean removed, so that the raw and the within-digit targets are the same.
    style = {
        name: regression.centre_by_class(rng.uniform(-1.0, 1.0, len(labels)), labels)
        for name in renderer.STYLE_FACTORS
    }
    images = rng.integers(0, 256, (len(labels), 28, 28)).astype(np.uint8)
    images[:, 0, 0] = np.round((style["slant"] + 1.5) * 85.0)  # pixel 0 is linear in slant
    images[:, 0, 1] = np.round((style["shift_x"] + 1.5) * 85.0)  # pixel 1 is linear in shift_x
    data = mnist_formats.MnistData(images, labels, images, labels, source="procedural:test", test_style=style)
    monkeypatch.setattr(mnist_style.mnist_sources, "load_mnist", lambda config: data)
    config = mnist_config(set_size=8)
    metrics = mnist_style.evaluate_mnist_run(
        pixel_encoder(0, seed=1),
        config,
        str(tmp_path / "eval"),
        untrained=pixel_encoder(1, seed=2),
        probe_epochs=1,
    )
    written = json.loads((tmp_path / "eval" / mnist_style.METRICS_FILE).read_text())
    for model in ("trained", "untrained"):
        true_style = written[model]["true_style_r2"]
        assert set(true_style) == set(renderer.STYLE_FACTORS)
        for entry in true_style.values():
            assert {
                "ridge_raw_seen_digits",
                "knn_within_digit_seen_digits",
                "ridge_within_digit_holdout_digit",
            } <= set(entry)
    for model, factor in (("trained", "slant"), ("untrained", "shift_x")):
        true_style = metrics[model]["true_style_r2"]
        for key in (
            "ridge_raw_seen_digits",
            "ridge_within_digit_seen_digits",
            "ridge_within_digit_holdout_digit",
        ):
            assert true_style[factor][key] > 0.99
            assert true_style["thickness"][key] < 0.2
    line = mnist_style.true_style_summary(metrics)
    assert all(name in line for name in renderer.STYLE_FACTORS)
    assert mnist_style.true_style_summary({"trained": {"style_r2": {}}}) is None
