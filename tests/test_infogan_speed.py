"""benchmarks/infogan_speed.py: the eager loop runs the step the compiled ``fit`` runs (the same
losses, the same update of both optimizers), and the section, written from a results dict alone,
reads the measured rates."""

from __future__ import annotations

import keras
import numpy as np
import pytest
import tensorflow as tf

from abc_tf import optimizers
from abc_tf.runs import training
from benchmarks import infogan_speed, loops
from tolerance_helpers import assert_same_sgd_step, rounding_rtol


@pytest.mark.slow
@pytest.mark.parametrize("variant", ["elastic", "infogan"])
def test_the_eager_loop_computes_the_compiled_step(variant, monkeypatch):
    # Two models of one seed: the same weights, the same batch. The step's random draws (z, the
    # Gumbel noise, the augmentation) are stateless in (seed, step), so both draw the same numbers.
    # Both optimizers plain SGD for this check: the G step runs after the D step, through D's new
    # weights, and Adam's first step moves a D weight whose gradient is rounding-sized by a full
    # lr one way or the other, which G's gradient then carries on, past any rounding bound (on an
    # AVX2 host 1.8% of the weights moved apart by more than 1% of the step).
    monkeypatch.setattr(
        optimizers,
        "adam",
        lambda learning_rate, betas=None, epsilon=None: keras.optimizers.SGD(learning_rate),
    )
    config = infogan_speed.config_for(variant, jit_compile=False).replace(batch_size=8)
    batch = infogan_speed._batch(config)
    eager, compiled = training.build_model(config), training.build_model(config)
    before = [variable.numpy() for variable in eager.trainable_variables]
    logs = loops.eager_step(eager, batch)
    history = compiled.fit(tf.data.Dataset.from_tensors(batch), epochs=1, verbose=0, shuffle=False).history
    # One forward pass along two paths (eager kernels and the graph's), in float32: a loss passes
    # about 10,000 roundings (the fan-ins of G's and D's layers on its chain, 6,272 of them in
    # D's dense layer, and the batch statistics) with conditions near 1 (cross entropies of logits
    # near 0). The InfoGAN variant's NT-Xent is 0 in both: atol.
    for name in ("loss", "d_loss", "g_loss", "info_loss", "ntxent_loss"):
        np.testing.assert_allclose(float(logs[name]), history[name][0], rtol=rounding_rtol(10_000), atol=1e-6)
    assert (float(logs["ntxent_loss"]) > 0) == (variant == "elastic")
    assert len(eager.trainable_variables) == len(compiled.trainable_variables)
    # The gradients pass the same ~10,000 roundings backwards, and each batch normalisation's
    # gradient on 8 samples, g - mean(g) - x_hat mean(g x_hat) with |x_hat| <= sqrt(7), sums terms
    # up to 9 times the largest gradient (the condition).
    assert isinstance(eager.d_optimizer, keras.optimizers.SGD)
    assert_same_sgd_step(
        before, eager.trainable_variables, compiled.trainable_variables, roundings=10_000, condition=9
    )
    # Both optimizers stepped once in each.
    for model in (eager, compiled):
        assert int(model.optimizer.iterations.numpy()) == 1 and int(model.d_optimizer.iterations.numpy()) == 1


def test_the_ablation_is_uniform_infogan():
    config = infogan_speed.config_for("infogan", jit_compile=True)
    assert (
        config.method.prior == "uniform"
        and config.method.contrastive_weight == 0
        and config.trainer.jit_compile == "true"
    )
    assert config.data.source == "procedural" and config.batch.batch_size == 64


def _evaluation() -> dict:
    seconds = {
        "classifier_training": 60.0,
        "classifier_cached": 0.5,
        "generated": 2.0,
        "embedding": 1.5,
        "nearest_neighbour": 3.0,
        "kmeans": 4.0,
        "q_code": 1.0,
    }
    return {
        "seconds": seconds,
        "classifier_accuracy": 0.9876,
        "test_images": 10_000,
        "train_images": 60_000,
        "split_images": 40_000,
        "feature_dim": 128,
        "per_code": 1000,
        "class_split": 1,
    }


def _results(result: dict, memory: dict, steps: int, rounds: int) -> dict:
    """A results dict in the shape main() saves."""
    return {
        "steps": steps,
        "rounds": rounds,
        "memory_steps": 10,
        "result": result,
        "memory": memory,
        "evaluation": _evaluation(),
        "machine": "Measured on a test.",
        "load": [1.0, 1.5],
        "cpu_count": 2,
        "command": f"python -m benchmarks.infogan_speed --steps {steps} --rounds {rounds}",
    }


def test_the_table_reads_the_rates():
    rates = {"elastic_eager": 2.0, "elastic_fit": 8.0, "infogan_fit": 10.0, "infogan_fit_xla": 12.0}
    result = {
        "rates": rates,
        "failed": {"elastic_fit_xla": "Detected unsupported operations: ResizeBicubic"},
        "images_per_step": 64,
        "parameters": 12_345,
    }
    memory = {"elastic_eager": 700.0, "elastic_fit": 750.0, "infogan_fit": 720.0}
    text = infogan_speed.section(_results(result, memory, steps=10, rounds=3))
    assert text.startswith("`mnist_elastic_infogan`'s step from memory, median of 3 rounds of 10 steps.")
    assert "| Elastic-InfoGAN, eager | 2.00 | 1.0x |" in text
    assert "| Elastic-InfoGAN, graph | 8.00 | 4.0x |" in text
    assert "| Elastic-InfoGAN, XLA | does not compile | - |" in text
    assert "ResizeBicubic" in text
    assert "Goal compiled >= 3x eager: met; XLA does not compile the step (why: above)." in text
    # cached: 0.5 + 2 + 1.5 + 3 + 4 + 1 = 12.0; the first: 12.0 - 0.5 + 60 = 71.5
    assert "An evaluation takes 12.0 s, 71.5 s the first time." in text
    assert (
        "`python -m benchmarks.infogan_speed --steps 10 --rounds 3`, Measured on a test, load 1.0-1.5."
        in text
    )


def test_the_goal_can_fail():
    rates = {setting: 10.0 for setting in infogan_speed.SETTINGS}
    rates.update(elastic_fit=25.0, elastic_fit_xla=29.0)
    result = {"rates": rates, "failed": {}, "images_per_step": 64, "parameters": 1}
    text = infogan_speed.section(_results(result, {}, steps=1, rounds=1))
    assert "Goal compiled >= 3x eager: not met." in text
