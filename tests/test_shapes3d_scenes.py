"""The procedural Shapes3D renderer (abc_tf.data.shapes3d.scenes): deterministic scenes
that change along every factor, hues that map to their colours, bad factors refused. The family
built on it: tests/test_shapes3d.py."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from matplotlib.colors import rgb_to_hsv

from abc_tf.data.shapes3d import family as s3d
from abc_tf.data.shapes3d import scenes as render

SIZES = np.array(s3d.FACTOR_SIZES)


def test_renderer_is_deterministic_and_batch_independent():
    factors = np.random.default_rng(0).integers(0, SIZES, size=(5, 6))
    batch = render.render(factors)
    assert batch.shape == (5, 64, 64, 3) and batch.dtype == np.uint8
    np.testing.assert_array_equal(batch, render.render(factors))
    for row, image in zip(factors, batch):
        np.testing.assert_array_equal(render.render(row), image)


def test_images_differ_along_every_factor():
    rng = np.random.default_rng(1)
    for base in rng.integers(0, SIZES, size=(8, 6)):
        image = render.render(base).astype(np.int16)
        for factor, size in enumerate(SIZES):
            other = base.copy()
            other[factor] = (other[factor] + 1) % size
            changed = np.any(render.render(other).astype(np.int16) != image, axis=-1)
            assert changed.sum() >= 20, (s3d.FACTOR_NAMES[factor], base)


def test_hues_map_to_their_colours():
    tables = render.weight_tables()
    scale, shape, orientation = 4, 0, 7
    weights = tables[scale, shape, orientation]  # [64, 64, 3 surfaces]
    for hue in range(10):
        floor, wall, obj = hue, (hue + 3) % 10, (hue + 6) % 10
        image = render.render(np.array([floor, wall, obj, scale, shape, orientation])) / 255.0
        hsv = rgb_to_hsv(image)
        for surface, value in ((render.FLOOR, floor), (render.WALL, wall), (render.OBJECT, obj)):
            # Pixels covered by this surface alone, bright enough for a precise hue.
            pure = (weights[..., surface] > 0.3) & (np.count_nonzero(weights, axis=-1) == 1)
            assert pure.sum() > 50
            error = np.abs((hsv[pure, 0] - value / 10 + 0.5) % 1.0 - 0.5)
            assert error.max() < 0.01, (surface, value)
            assert np.all(hsv[pure, 1] > 0.97)  # fully saturated
    # Named colours: hue 0 is red, hue 0.3 yellow-green, hue 0.6 blue-ish.
    np.testing.assert_allclose(
        render.hue_to_rgb(np.array([0.0, 0.3, 0.6])),  # float64, a few roundings
        [[1, 0, 0], [0.2, 1, 0], [0, 0.4, 1]],
        atol=1e-6,
    )


def test_object_grows_with_scale_and_shapes_differ():
    tables = render.weight_tables()
    for shape in range(4):
        areas = [(tables[scale, shape, 7, ..., render.OBJECT] > 0).sum() for scale in range(8)]
        assert all(a < b for a, b in zip(areas, areas[1:])), (render.SHAPES[shape], areas)
    masks = [tables[4, shape, 7, ..., render.OBJECT] > 0.05 for shape in range(4)]
    for a, b in itertools.combinations(range(4), 2):
        assert np.count_nonzero(masks[a] != masks[b]) > 20


def test_render_rejects_bad_factors():
    with pytest.raises(ValueError, match="out of range"):
        render.render(np.array([0, 0, 0, 8, 0, 0]))
    with pytest.raises(ValueError, match=r"\[\.\.\., 6\]"):
        render.render(np.zeros((2, 5), dtype=np.int64))
