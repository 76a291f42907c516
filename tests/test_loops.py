"""benchmarks/loops.py: the work count against Table S3 by hand, and the runners on a small step."""

import numpy as np
import pytest
import tensorflow as tf

import models
from benchmarks import loops


def test_forward_macs_of_s3_match_the_table_by_hand():
    # Table S3 on 64x64x3: convolution outputs 62, 60, 29, 27, 25, 12 pixels a side, 3x3 kernels.
    convolutions = [(62, 32, 3), (60, 32, 32), (29, 64, 32), (27, 64, 64), (25, 128, 64), (12, 128, 128)]
    expected = (
        sum(side * side * out * 9 * inp for side, out, inp in convolutions) + 12 * 12 * 128 * 128 + 128 * 64
    )
    assert loops.forward_macs(models.build("s3")) == expected == 148_555_136
    assert loops.training_gflop(models.build("s3"), 64) == 6 * expected * 64 / 1e9


def test_graph_gflop_counts_a_step_s_products_and_refuses_to_add_up_branches():
    kernel = tf.ones([16, 4])
    spec = tf.TensorSpec([8, 16], tf.float32)
    # A matrix product [8, 16] x [16, 4]: 8 * 4 outputs of 16 multiply-adds, 2 flop each.
    assert round(loops.graph_gflop(lambda x: tf.matmul(x, kernel), spec) * 1e9) == 2 * 8 * 4 * 16
    # A conditional would count both branches' work as if both ran: no figure rather than a wrong one.
    assert (
        loops.graph_gflop(
            lambda x: tf.cond(tf.reduce_sum(x) > 0, lambda: tf.matmul(x, kernel), lambda: tf.zeros([8, 4])),
            spec,
        )
        is None
    )


def test_interleaved_rates_take_the_median_of_each_runner():
    calls = []

    def runner(values):
        values = iter(values)
        return lambda steps: calls.append(steps) or next(values)

    rates = loops.interleaved_rates(
        {"a": runner([1.0, 9.0, 2.0]), "b": runner([5.0, 4.0, 6.0])}, steps=7, rounds=3
    )
    assert rates == {"a": 2.0, "b": 5.0}
    assert calls == [7] * 6


@pytest.mark.slow
def test_eager_and_fit_runners_train_the_same_step():
    rng = np.random.default_rng(0)
    batch = {key: rng.integers(0, 256, size=(1, 8, 28, 28, 1), dtype=np.uint8) for key in ("set_a", "set_b")}
    build = lambda: models.build("s4")  # noqa: E731
    eager = loops.eager_runner(build, batch, "l2sq", 1.0)
    fit = loops.fit_runner(build, batch, steps_per_execution=2)
    assert eager(2) > 0 and fit(3) > 0  # three steps round down to one call of two
    model = loops.compiled_model(build)
    assert loops.pipeline_fit_rate(model, tf.data.Dataset.from_tensors(batch).repeat(), 2, 2) > 0
    assert int(model.optimizer.iterations.numpy()) == 6  # three epochs of two steps, the first uncounted


@pytest.mark.slow
def test_bare_runner_trains_the_model_with_a_plain_compiled_step():
    rng = np.random.default_rng(1)
    batch = {key: rng.integers(0, 256, size=(1, 8, 28, 28, 1), dtype=np.uint8) for key in ("set_a", "set_b")}
    run = loops.bare_runner(lambda: models.build("s4"), batch)
    assert run(3) > 0
