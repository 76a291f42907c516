"""benchmarks/gpu_keras.py, the JAX path of the GPU benchmark: its keras.ops restatement of the
loss is the library's, and each preset's batch is laid out as the trainer lays it out."""

import numpy as np
import tensorflow as tf

from abc_tf import losses
from benchmarks import gpu_keras


def test_keras_ops_restatement_of_the_loss_matches_abc_tf_losses():
    # benchmarks/gpu_keras.py trains on JAX with this restatement; it must be the library's loss.
    rng = np.random.default_rng(3)
    sets = [tf.constant(rng.normal(size=(2, n, 5)), tf.float32) for n in (6, 4, 6, 4)]
    for similarity, temperature in (("l2sq", 1.0), ("l2", 0.5), ("cosine", 0.1)):
        for views in (sets[:2], sets):
            expected, _ = losses.abc_loss(*views[:2], similarity, temperature, *views[2:])
            got = gpu_keras.abc_loss_ops(*views[:2], similarity, temperature, *views[2:])
            np.testing.assert_allclose(float(got), float(expected), rtol=1e-5)


def test_gpu_keras_lays_out_each_preset_batch():
    assert gpu_keras.experiment_settings("mnist")["set_shapes"] == [(1, 64, 28, 28, 1)] * 2
    # pose_quick: double augmentation, so set_a, set_b and their second views.
    assert gpu_keras.experiment_settings("pose_quick")["set_shapes"] == [(4, 32, 32, 32, 3)] * 4
