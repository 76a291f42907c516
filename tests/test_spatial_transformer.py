"""The affine spatial transformer (models/spatial_transformer.py): the matrix exponential against
TensorFlow's, the identity, known translations and rotations of a test pattern, the inverse,
gradients against finite differences, and the layer saved and loaded."""

from __future__ import annotations

import keras
import numpy as np
import pytest
import tensorflow as tf

from models import spatial_transformer as st
from tolerance_helpers import EPS32, rounding_rtol


def theta_of(generator_rows: list[list[float]]) -> np.ndarray:
    return np.asarray(generator_rows, np.float32).reshape(1, 6)


def dot_image(size: int, row: int, column: int) -> np.ndarray:
    image = np.zeros((1, size, size, 1), np.float32)
    image[0, row, column, 0] = 1.0
    return image


def test_expm_matches_tensorflow_and_the_inverse_is_minus_theta():
    rng = np.random.default_rng(0)
    # In float64, where the series' truncation, which the module keeps below float32's rounding
    # (EPS32 of the result's size), is what remains: float64's own rounding, 16 squarings x 60
    # Horner roundings x eps64 = 2e-13 of it, is far below. (In float32 that rounding alone is up
    # to rounding_rtol(16 x 60) = 2.3e-4 of the size, the same on no two CPUs.)
    theta = rng.normal(scale=1.5, size=(5, 6))
    generators = st.generator(theta)
    expected = tf.linalg.expm(generators).numpy()
    np.testing.assert_allclose(st.expm(generators), expected, rtol=0, atol=EPS32 * np.abs(expected).max())
    forward = np.concatenate(
        [np.asarray(st.affine_matrices(theta)), np.tile([[[0, 0, 1]]], (5, 1, 1))], axis=1
    )
    backward = np.concatenate(
        [np.asarray(st.affine_matrices(theta, inverse=True)), np.tile([[[0, 0, 1]]], (5, 1, 1))], axis=1
    )
    size = (np.abs(forward) @ np.abs(backward)).max()  # the product's terms
    np.testing.assert_allclose(forward @ backward, np.tile(np.eye(3), (5, 1, 1)), atol=2 * EPS32 * size)


def test_theta_zero_leaves_the_image_unchanged():
    image = np.random.default_rng(1).uniform(size=(2, 7, 9, 3)).astype(np.float32)
    out = st.SpatialTransformer()([image, np.zeros((2, 6), np.float32)])
    # expm(0) = I exactly; the columns -1 + j / 4 are exact and the rows (y + 1) 3, y = -1 + i / 3
    # rounded, within 4e-7 of i: a bilinear weight that small of a neighbour in [0, 1].
    np.testing.assert_allclose(out, image, atol=1e-6)


def test_a_translation_moves_the_pattern_against_its_sign():
    size = 9
    step = 2.0 / (size - 1)  # one pixel on the normalised grid
    image = dot_image(size, 4, 4)
    # Exact arithmetic: the generators are nilpotent, so the series is I + X exactly, and every
    # coordinate is a multiple of 1/8 (the tolerances only for the record).
    # The generator [[0 0 t], [0 0 0]] exponentiates to the translation x + t: output pixel x
    # shows the input at x + t, so the dot moves by -t.
    out = np.asarray(st.SpatialTransformer()([image, theta_of([[0, 0, 2 * step], [0, 0, 0]])]))
    np.testing.assert_allclose(out, dot_image(size, 4, 2), atol=1e-5)
    out = np.asarray(st.SpatialTransformer()([image, theta_of([[0, 0, 0], [0, 0, -step]])]))
    np.testing.assert_allclose(out, dot_image(size, 5, 4), atol=1e-5)
    # Half a pixel splits the dot between two pixels (bilinear).
    out = np.asarray(st.SpatialTransformer()([image, theta_of([[0, 0, step / 2], [0, 0, 0]])]))
    np.testing.assert_allclose(out[0, 4, 3:5, 0], [0.5, 0.5], atol=1e-5)
    assert out.sum() == pytest.approx(1.0, abs=1e-5)
    # Content moved in from outside the image is zero.
    full = np.ones((1, size, size, 1), np.float32)
    out = np.asarray(st.SpatialTransformer()([full, theta_of([[0, 0, 3 * step], [0, 0, 0]])]))
    np.testing.assert_allclose(out[0, :, -3:, 0], 0.0, atol=1e-5)
    np.testing.assert_allclose(out[0, :, :-3, 0], 1.0, atol=1e-5)


def test_a_rotation_by_90_degrees_moves_a_dot_where_the_formula_says():
    size = 9
    angle = np.pi / 2
    image = dot_image(size, 1, 6)  # y = -1 + 2/8 = -0.75, x = -1 + 12/8 = 0.5
    # Generator [[0 -a 0], [a 0 0]]: T = rotation R by a. Output p shows input R p, so the dot
    # at q appears at R^-1 q = (x cos a + y sin a, -x sin a + y cos a) = (y, -x) = (-0.75, -0.5),
    # i.e. column 1, row 2.
    # float32 against the exact rotation: the expm's 16 x 60 roundings move a coordinate up to 4
    # pixels from the centre by 4 rounding_rtol(960) / 2 pixels, and a pixel of the dot by as much
    # along each axis; the inverse does it twice.
    tolerance = 2 * 4 * rounding_rtol(16 * 60) / 2
    out = np.asarray(st.SpatialTransformer()([image, theta_of([[0, -angle, 0], [angle, 0, 0]])]))
    np.testing.assert_allclose(out, dot_image(size, 2, 1), atol=tolerance)
    # The inverse layer undoes it.
    back = np.asarray(st.SpatialTransformer(inverse=True)([out, theta_of([[0, -angle, 0], [angle, 0, 0]])]))
    np.testing.assert_allclose(back, image, atol=2 * tolerance)


@pytest.mark.slow
def test_gradients_to_theta_and_the_image_match_finite_differences():
    rng = np.random.default_rng(2)
    image = tf.constant(rng.uniform(size=(2, 6, 5, 1)), tf.float64)
    # Away from integer pixel positions the sampler is smooth in theta.
    theta = tf.constant(rng.normal(scale=0.2, size=(2, 6)), tf.float64)

    def warped(x, t):
        return st.warp(x, st.affine_matrices(t))

    theoretical, numerical = tf.test.compute_gradient(warped, [image, theta], delta=1e-6)
    # float64: the central difference rounds by eps64 |f| / delta = 2e-10 and truncates by
    # delta^2 |f'''| ~ 1e-12; 1e-5 is far above both and far below a wrong gradient.
    for analytic, finite in zip(theoretical, numerical):
        assert np.abs(analytic).max() > 0
        np.testing.assert_allclose(analytic, finite, atol=1e-5)


def test_the_layer_saves_and_loads_in_a_keras_file(tmp_path):
    images = keras.Input((8, 8, 1))
    theta = keras.Input((6,))
    model = keras.Model([images, theta], st.SpatialTransformer(inverse=True)([images, theta]))
    path = str(tmp_path / "warp.keras")
    model.save(path)
    loaded = keras.saving.load_model(path)
    rng = np.random.default_rng(3)
    x, t = (
        rng.uniform(size=(2, 8, 8, 1)).astype(np.float32),
        rng.normal(scale=0.3, size=(2, 6)).astype(np.float32),
    )
    np.testing.assert_allclose(loaded([x, t]), model([x, t]), atol=1e-6)  # the same layer: equal
    assert loaded.layers[-1].inverse
