"""abc_tf.optimizers: the one optimizer factory."""

from __future__ import annotations

import keras
import numpy as np

from abc_tf import optimizers


def test_adam_defaults_are_keras_and_the_schedule_halves():
    constant = optimizers.adam(1e-3)
    assert isinstance(constant, keras.optimizers.Adam)
    assert (constant.beta_1, constant.beta_2, constant.epsilon) == (0.9, 0.999, 1e-7)
    assert np.isclose(float(constant.learning_rate), 1e-3)
    schedule = keras.optimizers.schedules.deserialize(optimizers.adam(1e-3, halving_steps=10).get_config()["learning_rate"])
    assert np.isclose(float(schedule(9)), 1e-3) and np.isclose(float(schedule(10)), 5e-4)


def test_adam_takes_the_peers_betas_and_epsilon():
    optimizer = optimizers.adam(2e-4, betas=(0.5, 0.999), epsilon=1e-8)
    assert (optimizer.beta_1, optimizer.beta_2, optimizer.epsilon) == (0.5, 0.999, 1e-8)
