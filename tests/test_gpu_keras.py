"""benchmarks/gpu_keras.py, the JAX path of the GPU benchmark: its keras.ops restatement of the
loss is the library's, and each preset's batch is laid out as the trainer lays it out."""

import numpy as np
import tensorflow as tf

from abc_tf import losses
from benchmarks import gpu_keras
from tolerance_helpers import rounding_rtol


def test_keras_ops_restatement_of_the_loss_matches_abc_tf_losses():
    # benchmarks/gpu_keras.py trains on JAX with this restatement; it must be the library's loss.
    rng = np.random.default_rng(3)
    sets = [tf.constant(rng.normal(size=(2, n, 5)), tf.float32) for n in (6, 4, 6, 4)]
    # Two float32 evaluations: two similarities of D = 5 with their norms, a softmax and a soft
    # neighbour over 4 or 6, a log-softmax, means: about 40 roundings, on similarities up to
    # (|a| + |b|)^2 (l2sq), |a| + |b| (l2) or 1 (cosine), over tau, against a loss of about 2.
    reach = float(tf.reduce_max(tf.norm(tf.concat([tf.reshape(v, (-1, 5)) for v in sets], 0), axis=-1))) * 2
    for similarity, temperature in (("l2sq", 1.0), ("l2", 0.5), ("cosine", 0.1)):
        size = {"l2sq": reach**2, "l2": reach, "cosine": 1.0}[similarity]
        for views in (sets[:2], sets):
            expected, _ = losses.abc_loss(*views[:2], similarity, temperature, *views[2:])
            got = gpu_keras.abc_loss_ops(*views[:2], similarity, temperature, *views[2:])
            np.testing.assert_allclose(
                float(got), float(expected), rtol=rounding_rtol(40, condition=size / temperature)
            )


def test_gpu_keras_lays_out_each_preset_batch():
    assert gpu_keras.experiment_settings("mnist")["set_shapes"] == [(1, 64, 28, 28, 1)] * 2
    # pose_quick: double augmentation, so set_a, set_b and their second views.
    assert gpu_keras.experiment_settings("pose_quick")["set_shapes"] == [(4, 32, 32, 32, 3)] * 4


def test_gpu_keras_reports_the_preset_facts_its_sections_state():
    # gpu.py's sections read these from the results, never from the presets.
    assert gpu_keras.preset_facts("pose_lookup_car") == {
        "model": "s5",
        "embedding_dim": 64,
        "similarity": "cosine",
        "image_shape": [128, 128, 3],
        "preset_steps": 40_000,
    }
    assert gpu_keras.preset_facts("mnist")["image_shape"] == [28, 28, 1]
