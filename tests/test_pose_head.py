"""The spherical-regression pose head (models/pose_head.py): its table, the spherical
exponential, the quadrant decoding and its loss, trained alone (docs/PAPERS.md section 2)."""

import keras
import numpy as np
import pytest
import tensorflow as tf

import models
from models import pose_head
from tolerance_helpers import rounding_rtol


def test_head_matches_table():
    rng = np.random.default_rng(0)
    head = models.build("spherical_regression", embedding_dim=64)
    per_angle = (64 * 128 + 128) + (128 * 2 + 2) + (128 * 4 + 4)
    assert sum(int(np.prod(w.shape)) for w in head.trainable_weights) == 3 * per_angle == 27_282
    outputs = head(rng.normal(size=(5, 64)).astype(np.float32))
    assert outputs["magnitude"].shape == (5, 3, 2) and outputs["quadrant_logits"].shape == (5, 3, 4)
    # Embeddings are L2-normalised first: the scale of an embedding does not matter.
    x = rng.normal(size=(3, 64)).astype(np.float32)
    # 7 x and x normalise to unit vectors a few roundings apart (7 x rounds, and the 64-term
    # norms), which the head's layers (fan-ins 64 and 128) carry to magnitudes <= 1.
    np.testing.assert_allclose(
        head(7.0 * x)["magnitude"].numpy(),
        head(x)["magnitude"].numpy(),
        atol=rounding_rtol(1 + 64 + 64 + 128),
    )


def test_spherical_exponential_is_unit_norm_with_finite_gradients():
    logits = tf.constant([[0.0, 0.0], [3.0, -2.0], [200.0, -200.0], [-1e4, 1e4]])
    with tf.GradientTape() as tape:
        tape.watch(logits)
        values = pose_head.SphericalExponential()(logits)
        total = tf.reduce_sum(values)
    np.testing.assert_allclose(
        tf.norm(values, axis=-1).numpy(), 1.0, atol=1e-6
    )  # ~6 roundings of 1 against exact: 4e-7
    assert np.all(values.numpy() >= 0)
    np.testing.assert_allclose(
        values.numpy()[0], [np.sqrt(0.5)] * 2, atol=1e-7
    )  # sqrt(0.5) rounded once: 3e-8
    assert np.all(np.isfinite(tape.gradient(total, logits).numpy()))


def ideal_outputs(angles):
    """Head outputs that encode ``angles`` [B, 3] exactly."""
    magnitude = np.stack([np.abs(np.sin(angles)), np.abs(np.cos(angles))], axis=-1)
    quadrant = pose_head.quadrant_labels(angles).numpy()
    return {
        "magnitude": tf.constant(magnitude, tf.float32),
        "quadrant_logits": tf.constant(20.0 * np.eye(4)[quadrant], tf.float32),
    }


def test_decoding_recovers_angles_in_all_four_quadrants():
    angles = np.deg2rad([[30.0, 120.0, -150.0], [-60.0, 10.0, 179.0], [95.0, -95.0, -5.0]])
    np.testing.assert_array_equal(pose_head.quadrant_labels(angles[0]).numpy(), [0, 1, 3])
    np.testing.assert_array_equal(pose_head.quadrant_labels(angles[1]).numpy(), [2, 0, 1])
    # float32 magnitudes (6e-8) through atan2, and the angle's own rounding (pi x 6e-8): 3e-7.
    np.testing.assert_allclose(pose_head.decode_angles(ideal_outputs(angles)).numpy(), angles, atol=1e-6)
    # The loss of exact outputs is only the (small) residual cross entropy of the 4 logits.
    assert float(pose_head.spherical_regression_loss(angles, ideal_outputs(angles))) < 1e-6
    wrong = ideal_outputs(angles + 1.0)
    assert float(pose_head.spherical_regression_loss(angles, wrong)) > 1.0


@pytest.mark.slow
def test_head_loss_trains_the_head_alone():
    keras.utils.set_random_seed(0)
    head = models.build("spherical_regression", embedding_dim=4)
    angles = np.random.default_rng(1).uniform(-np.pi, np.pi, (256, 3)).astype(np.float32)
    # Embeddings that carry the angles (cos and sin of two of them).
    features = np.concatenate([np.cos(angles[:, :2]), np.sin(angles[:, :2])], axis=1).astype(np.float32)
    optimizer = keras.optimizers.Adam(1e-2)

    @tf.function
    def step():
        with tf.GradientTape() as tape:
            loss = pose_head.spherical_regression_loss(angles, head(features, training=True))
        optimizer.apply(tape.gradient(loss, head.trainable_variables), head.trainable_variables)
        return loss

    losses = [float(step()) for _ in range(60)]
    assert losses[-1] < 0.5 * losses[0]
