"""The one place an optimizer is made: every method asks :func:`run_adam` for its Adam on the
run's configured schedule, every estimator that trains (probes, MINE, the digit classifier)
:func:`adam` at its own rate."""

from __future__ import annotations

import keras

from abc_tf import schedules
from abc_tf.config import TrainerConfig

# Keras' defaults; PyTorch's Adam (the peers' code) differs in epsilon.
BETAS = (0.9, 0.999)
EPSILON = 1e-7
PYTORCH_ADAM_EPSILON = 1e-8  # torch.optim.Adam's default eps, which the peers' code leaves as is


def adam(
    learning_rate: float | keras.optimizers.schedules.LearningRateSchedule,
    betas: tuple[float, float] = BETAS,
    epsilon: float = EPSILON,
) -> keras.optimizers.Adam:
    """Adam at ``learning_rate`` (a rate or a schedule of the step) with moment decays ``betas``."""
    return keras.optimizers.Adam(learning_rate, beta_1=betas[0], beta_2=betas[1], epsilon=epsilon)


def run_learning_rate(trainer: TrainerConfig) -> float | keras.optimizers.schedules.LearningRateSchedule:
    """A run's configured rate: ``--trainer.learning_rate``, halved every
    ``--trainer.lr_halving_steps``, times ``--trainer.lr_drop_factor`` from ``--trainer.lr_drop_step`` on."""
    return schedules.learning_rate(
        trainer.learning_rate, trainer.lr_halving_steps, trainer.lr_drop_step, trainer.lr_drop_factor
    )


def run_adam(
    trainer: TrainerConfig, betas: tuple[float, float] = BETAS, epsilon: float = EPSILON
) -> keras.optimizers.Adam:
    """A run's Adam, on its configured rate (:func:`run_learning_rate`)."""
    return adam(run_learning_rate(trainer), betas, epsilon)
