"""MNIST style evaluation (abc_tf.evaluation.mnist_style): the retrieval grid under the loss's
similarity, and a whole evaluation of an untrained encoder writing its figures and metrics."""

import json

import keras
import numpy as np
import pytest

import models
from abc_tf.data.render import digits as renderer
from abc_tf.evaluation import mnist_style
from mnist_helpers import mnist_config


def test_retrieval_grid_rows_hold_the_right_classes(tmp_path):
    rng = np.random.default_rng(1)
    labels = np.repeat(np.arange(10), 7)
    embeddings = rng.normal(size=(len(labels), 4))
    grid = mnist_style.retrieval_grid(embeddings, labels, seed=3)
    assert grid.indices.shape == (10, 10)
    # Column c holds an image of digit c; the diagonal holds the queries.
    assert np.all(labels[grid.indices] == np.arange(10)[None, :])
    for row in range(10):
        query = embeddings[grid.indices[row, row]]
        for col in range(10):
            if col != row:  # the retrieved image is the closest of its class
                members = np.flatnonzero(labels == col)
                best = members[np.argmin(np.sum((embeddings[members] - query) ** 2, axis=1))]
                assert grid.indices[row, col] == best
    # The loss's similarities: l2 ranks as l2sq does; the scores are s(query, retrieved).
    l2 = mnist_style.retrieval_grid(embeddings, labels, similarity="l2", seed=3)
    assert np.array_equal(l2.indices, grid.indices)
    distances = np.linalg.norm(embeddings[grid.indices] - embeddings[np.diag(grid.indices)][:, None], axis=-1)
    np.testing.assert_allclose(grid.similarity, -distances**2, atol=1e-9)
    np.testing.assert_allclose(l2.similarity, -np.sqrt(distances**2 + 1e-9), atol=1e-9)
    images = rng.integers(0, 255, size=(len(labels), 28, 28), dtype=np.uint8)
    mnist_style.plot_retrieval_grids(images, [("a", grid), ("b", grid)], str(tmp_path / "grid.png"), holdout_digit=9)
    assert (tmp_path / "grid.png").stat().st_size > 1000
    with pytest.raises(ValueError, match="no image of digit"):
        mnist_style.retrieval_grid(embeddings[labels < 9], labels[labels < 9])


def test_evaluate_mnist_run_writes_figures_and_metrics(tmp_path):
    # A small procedural test split stands in for MNIST through an .npz.
    train, test = renderer.procedural_mnist(seed=1, train_size=200, test_size=200)
    path = str(tmp_path / "digits.npz")
    np.savez(path, x_train=train.images, y_train=train.labels, x_test=test.images, y_test=test.labels)
    config = mnist_config(data_path=path, set_size=8)
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
        assert 0.0 <= entry["digit_probe_accuracy"]["noise_at_length_scale"] <= 1.0
        assert np.array(entry["retrieval_grid"]["indices"]).shape == (10, 10)
    assert metrics["trained"]["pca_top2_variance"] <= 1.0
