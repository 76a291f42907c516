"""benchmarks/vitae_speed.py: the eager loop runs the step the compiled ``fit`` runs (same loss,
same update, with and without XLA), the warp's three modes agree, and the section's table reads
the measured rates."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from abc_tf.methods.vae import model as vitae
from abc_tf.runs import training
from models import spatial_transformer
from benchmarks import loops, vitae_speed
from tolerance_helpers import EPS64, assert_same_adam_step, rounding_rtol


@pytest.fixture
def fixed_noise(monkeypatch):
    """The samples' noise and the augmentation's maps fixed: the stateless random ops draw other
    numbers under XLA than in the graph or eagerly, so the steps would otherwise differ."""
    rng = np.random.default_rng(0)
    draws = {space: rng.standard_normal([8, 2]).astype(np.float32) for space in ("appearance", "perspective")}
    maps = np.tile(np.array([[[0.9, -0.2, 0.1], [0.2, 0.9, -0.05]]], np.float32), [8, 1, 1])
    monkeypatch.setattr(
        vitae, "draw_noise", lambda batch, dims, seed: {k: tf.constant(v) for k, v in draws.items()}
    )
    monkeypatch.setattr(
        vitae, "random_affine", lambda images, seed: spatial_transformer.warp(images, tf.constant(maps))
    )


@pytest.mark.slow
@pytest.mark.parametrize("jit_compile", [False, True])
def test_the_eager_loop_computes_the_compiled_step(jit_compile, fixed_noise):
    # Two models of one seed: the same weights, the same noise, the same batch.
    config = vitae_speed.config_for("c_vitae", 8, jit_compile).replace(steps=100)
    batch = vitae_speed._batch(config)
    eager, compiled = training.build_model(config), training.build_model(config)
    for model in (eager, compiled):
        model.optimizer.iterations.assign(30)  # inside the KL warm-up: 0 < w < 1
    before = [variable.numpy() for variable in eager.trainable_variables]
    logs = loops.eager_step(eager, batch)
    history = compiled.fit(tf.data.Dataset.from_tensors(batch), epochs=1, verbose=0, shuffle=False).history
    assert 0 < float(logs["kl_weight"]) < 1 and float(logs["kl_perspective"]) > 0
    # One forward pass along two paths (eager kernels, the graph's, XLA's), in float32: the loss
    # passes about 3,000 roundings (the fan-ins of the encoders, decoders and warps on its chain,
    # the 784 pixels' sum, the batch of 8) of terms of one sign.
    np.testing.assert_allclose(float(logs["loss"]), history["loss"][0], rtol=rounding_rtol(3000))
    assert_same_adam_step(before, eager.trainable_variables, compiled.trainable_variables)


@pytest.mark.slow
def test_the_warp_modes_agree():
    # In float64. In float32 XLA's fused, reordered products move a bilinear weight (the fraction
    # of a coordinate of up to 28 pixels, from an expm whose 4 squarings multiply its rounding by
    # 16) by ~28 x 16 x 60 eps32 = 3e-3 at worst, and an image gradient that cancels to 0.015 was
    # 8e-4 off on an AVX2 CPU. In float64 the same chain (expm's 60 Horner roundings x 16 x 28
    # pixels, then theta's gradient: a sum of 4 x 784 terms) stays within rounding_rtol(~30,000,
    # eps64) = 1.3e-11 of the terms' sizes (|weights x pixel differences x 13.5 pixels| < 100).
    tolerance = rounding_rtol(60 * 16 * 28 + 4 * 784, eps=EPS64)
    inputs = [tf.cast(value, tf.float64) for value in vitae_speed.warp_inputs(4)]
    eager = vitae_speed.warp_step("eager")(*inputs)
    for mode in ("function", "xla"):
        for ours, theirs in zip(eager, vitae_speed.warp_step(mode)(*inputs)):
            assert theirs.dtype == tf.float64
            np.testing.assert_allclose(theirs.numpy(), ours.numpy(), rtol=tolerance, atol=100 * tolerance)
    assert float(tf.reduce_sum(tf.abs(eager[2]))) > 0  # a gradient reaches theta


def results_with(result: dict, memory: dict) -> dict:
    """A results dict in the shape main() builds, around the measuring child's ``result``."""
    return {
        "steps": 20,
        "rounds": 3,
        "memory_steps": 10,
        "epoch_images": 54_051,
        "result": result,
        "memory": memory,
        "machine": "Measured on a test machine.",
        "load": [1.0, 1.5],
        "cpu_count": 2,
        "command": "python -m benchmarks.vitae_speed --steps 20 --rounds 3",
    }


def test_the_section_reads_the_rates():
    warp = {
        f"{mode}_{batch}": rate
        for batch in (128, 512)
        for mode, rate in zip(
            vitae_speed.WARP_MODES, (100.0 * 512 / batch, 400.0 * 512 / batch, 800.0 * 512 / batch)
        )
    }
    rates = {setting: 10.0 for setting in vitae_speed.SETTINGS}
    rates.update(
        c_vitae_eager_512=2.0,
        c_vitae_fit_512=5.0,
        c_vitae_fit_xla_512=8.0,
        c_vitae_eager_128=10.0,
        c_vitae_fit_128=20.0,
        c_vitae_fit_xla_128=40.0,
    )
    result = {
        "warp": warp,
        "rates": rates,
        "pipeline": {"512": 4.0, "128": 30.0},
        "stream": {"512": 50.0, "128": 90.0},
        "procedural_images": 54_000,
        "parameters": 12_345,
    }
    text = vitae_speed.section(results_with(result, {"c_vitae_fit_512": 700.0}))
    assert text.startswith("Steps/s of `mnist_c_vitae` and `mnist_c_vitae_quick` from memory, median of 3")
    assert "| 512 | 2.00 (1.0x) | 5.00 (2.5x) | 8.00 (4.0x) |" in text
    assert "met at batch 512 (best 4.00x); met at batch 128 (best 4.00x)." in text
    assert "`python -m benchmarks.vitae_speed --steps 20 --rounds 3`, Measured on a test machine" in text


def test_the_goal_can_fail():
    # 2.99x the eager loop is short of 3x, and reads so, not as a rounded 3.0x.
    rates = {setting: 10.0 for setting in vitae_speed.SETTINGS}
    rates.update(c_vitae_eager_512=10.0, c_vitae_fit_512=20.0, c_vitae_fit_xla_512=29.9)
    result = {
        "warp": {f"{m}_{b}": 1.0 for m in vitae_speed.WARP_MODES for b in (128, 512)},
        "rates": rates,
        "pipeline": {"512": 1.0, "128": 1.0},
        "stream": {"512": 1.0, "128": 1.0},
        "procedural_images": 1,
        "parameters": 1,
    }
    text = vitae_speed.section(results_with(result, {}))
    assert "not met at batch 512 (best 2.99x); not met at batch 128 (best 1.00x)." in text
