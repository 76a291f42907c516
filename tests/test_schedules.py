"""Schedules of the training step (abc_tf.schedules): the learning rate halved every
``lr_halving_steps`` steps, and the titration of real images (supplement S8.3)."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from abc_tf import schedules


def test_learning_rate_halves_in_stairs_or_stays_constant():
    assert schedules.learning_rate(1e-3, 0) == 1e-3  # no decay: the plain rate
    schedule = schedules.learning_rate(1e-3, 20)
    rates = [float(schedule(step)) for step in (0, 19, 20, 39, 40, 45, 100)]
    # float32's 1e-3 (6e-8 from it) times powers of 2, which are exact.
    np.testing.assert_allclose(rates, [1e-3, 1e-3, 5e-4, 5e-4, 2.5e-4, 2.5e-4, 1e-3 / 32], rtol=1e-6)


def test_learning_rate_drops_once_and_combines_with_halving():
    dropped = schedules.learning_rate(1e-3, drop_step=80)
    rates = [float(dropped(step)) for step in (0, 79, 80, 1000)]
    np.testing.assert_allclose(rates, [1e-3, 1e-3, 1e-4, 1e-4], rtol=1e-6)  # two float32 roundings
    both = schedules.learning_rate(1e-3, halving_steps=20, drop_step=30, drop_factor=0.5)
    np.testing.assert_allclose(
        [float(both(step)) for step in (19, 20, 30, 40)], [1e-3, 5e-4, 2.5e-4, 1.25e-4], rtol=1e-6
    )
    restored = keras.optimizers.schedules.deserialize(keras.optimizers.schedules.serialize(both))
    assert float(restored(40)) == float(both(40))


def test_titration_schedule_values():
    # The paper: 40k steps, stairs every 4k up to 10%: 0, 1/9, ..., 9/9 of the target. float32
    # products and quotients of 3 numbers: 3 roundings, 2e-7, under approx's 1e-6.
    assert schedules.real_fraction(0, 0.1, 4000, 40000) == 0.0
    assert schedules.real_fraction(3999, 0.1, 4000, 40000) == 0.0
    assert schedules.real_fraction(4000, 0.1, 4000, 40000) == pytest.approx(0.1 / 9)
    assert schedules.real_fraction(20000, 0.1, 4000, 40000) == pytest.approx(0.5 / 9)
    assert schedules.real_fraction(36000, 0.1, 4000, 40000) == pytest.approx(0.1)
    assert schedules.real_fraction(39999, 0.1, 4000, 40000) == pytest.approx(0.1)
    assert schedules.real_fraction(0, 0.1, 0, 40000) == 0.1  # no titration
    steps = tf.constant([0, 4000, 36000, 50000], tf.int64)
    np.testing.assert_allclose(
        schedules.real_fraction(steps, 0.1, 4000, 40000).numpy(), [0, 0.1 / 9, 0.1, 0.1], rtol=1e-6
    )


def test_titration_schedule_tensor_steps_of_other_dtypes_and_without_titration():
    # int32 steps (a tf.data counter) give float32 fractions; a run shorter than two stairs has one stage.
    steps = tf.constant([0, 9, 10, 30], tf.int32)
    values = schedules.real_fraction(steps, 0.5, 10, 15)
    assert values.dtype == tf.float32
    np.testing.assert_allclose(values.numpy(), [0.0, 0.0, 0.5, 0.5])
    assert schedules.real_fraction(np.int64(25), 0.3, 10, 40) == pytest.approx(0.2)
    np.testing.assert_allclose(schedules.real_fraction(steps, 0.25, 0, 40).numpy(), [0.25] * 4)
