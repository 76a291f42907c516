"""Figures are written as readable PNGs and reject mismatched inputs."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from abc_tf.evaluation.estimators import plots

NAMES = ["floor_hue", "wall_hue", "object_hue", "scale", "shape", "orientation"]
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _is_png(path) -> bool:
    with open(path, "rb") as handle:
        return handle.read(8) == PNG_MAGIC


def test_principal_components_find_the_dominant_direction():
    rng = np.random.default_rng(0)
    points = np.outer(rng.normal(size=200), [3.0, 4.0, 0.0]) + 0.01 * rng.normal(size=(200, 3))
    projected, ratio = plots.principal_components(points, 2)
    assert projected.shape == (200, 2)
    assert ratio[0] > 0.99 and ratio[0] > ratio[1]
    # The first component is the line's coordinate: |projection| = 5 |t|.
    assert np.corrcoef(projected[:, 0], points @ np.array([0.6, 0.8, 0.0]))[0, 1] ** 2 > 0.999
    # Other points in these axes: centred on the basis' mean, projected on its components.
    others = np.array([[3.0, 4.0, 0.0], [0.0, 0.0, 1.0]]) + points.mean(axis=0)
    shown, same_ratio = plots.principal_components(others, 2, basis_of=points)
    np.testing.assert_allclose(same_ratio, ratio)
    np.testing.assert_allclose(np.abs(shown[:, 0]), [5.0, 0.0], atol=0.01)
    assert plots.principal_components(points, 5)[0].shape == (200, 3)  # at most D components
    with pytest.raises(ValueError, match="PCA needs"):
        plots.principal_components(points, 2, basis_of=points[:, :2])


@pytest.mark.slow
def test_every_figure_writes_a_png(tmp_path):
    rng = np.random.default_rng(1)
    embeddings = rng.normal(size=(300, 8))
    factors = rng.integers(0, 4, size=(300, 6))
    values = rng.uniform(size=(5, 6))
    inactive = ["wall_hue"]
    paths = {
        "pca": plots.plot_embeddings_pca(embeddings, factors, NAMES, tmp_path / "pca.png", title="t"),
        "bars": plots.plot_factor_distribution(values, NAMES, inactive, tmp_path / "bars.png", kind="bars"),
        "violin": plots.plot_factor_distribution(values, NAMES, inactive, tmp_path / "violin.png"),
        "box": plots.plot_factor_distribution(values[:1], NAMES, inactive, tmp_path / "box.png", kind="box"),
        "probes": plots.plot_probe_accuracies(
            values, [0.1, 0.1, 0.1, 0.125, 0.25, 1 / 15], NAMES, inactive, tmp_path / "probes.png"
        ),
        "conditions": plots.plot_conditions(
            {"a": values, "b": values * 2}, NAMES, {"b": inactive}, tmp_path / "conditions.png"
        ),
    }
    for name in paths:
        assert _is_png(tmp_path / f"{name}.png"), name
    assert plots.figure_to_png(paths["pca"]).startswith(PNG_MAGIC)
    # Written with an adaptive palette of at most the asked number of colours.
    plots.save_figure(paths["pca"], tmp_path / "sub" / "few.png", colours=16)
    with Image.open(tmp_path / "sub" / "few.png") as image:
        assert image.mode == "P" and len(image.getcolors()) <= 16


def test_mismatched_inputs_raise():
    with pytest.raises(ValueError, match="names"):
        plots.plot_embeddings_pca(np.zeros((10, 2)), np.zeros((10, 3)), NAMES)
    with pytest.raises(ValueError, match="F = 6"):
        plots.plot_factor_distribution(np.zeros((2, 5)), NAMES)
    with pytest.raises(ValueError, match="not among"):
        plots.plot_factor_distribution(np.zeros(6), NAMES, inactive=["colour"], kind="bars")
    with pytest.raises(ValueError, match="kind"):
        plots.plot_factor_distribution(np.zeros((3, 6)), NAMES, kind="bar")
    with pytest.raises(ValueError, match="kind"):
        plots.plot_conditions({"a": np.zeros((3, 6))}, NAMES, {}, kind="bar")
