"""abc_tf.optimizers: the one optimizer factory."""

from __future__ import annotations

import keras
import numpy as np
import pytest

from abc_tf import optimizers
from abc_tf.config import TrainerConfig


def test_adam_defaults_are_keras_and_the_run_schedule_halves_and_drops():
    constant = optimizers.adam(1e-3)
    assert isinstance(constant, keras.optimizers.Adam)
    assert (constant.beta_1, constant.beta_2, constant.epsilon) == (0.9, 0.999, 1e-7)
    assert np.isclose(float(constant.learning_rate), 1e-3)
    trainer = TrainerConfig(learning_rate=1e-3, lr_halving_steps=10, lr_drop_step=15)
    schedule = keras.optimizers.schedules.deserialize(
        optimizers.run_adam(trainer).get_config()["learning_rate"]
    )
    assert np.allclose([float(schedule(step)) for step in (9, 10, 15)], [1e-3, 5e-4, 5e-5])
    assert float(optimizers.run_adam(TrainerConfig(learning_rate=1e-3)).learning_rate) == pytest.approx(1e-3)


def test_adam_takes_the_peers_betas_and_epsilon():
    optimizer = optimizers.adam(2e-4, betas=(0.5, 0.999), epsilon=1e-8)
    assert (optimizer.beta_1, optimizer.beta_2, optimizer.epsilon) == (0.5, 0.999, 1e-8)
