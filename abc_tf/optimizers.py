"""The one place an optimizer is made: every method and every estimator that trains (probes,
MINE, the digit classifier) asks :func:`adam` for its Adam."""

from __future__ import annotations

import keras

from abc_tf import schedules

# Keras' defaults; PyTorch's Adam (the peers' code) differs in epsilon (1e-8).
BETAS = (0.9, 0.999)
EPSILON = 1e-7


def adam(learning_rate: float, halving_steps: int = 0, betas: tuple[float, float] = BETAS,
         epsilon: float = EPSILON) -> keras.optimizers.Adam:
    """Adam at ``learning_rate``, halved every ``halving_steps`` steps (0: constant; the
    paper's pose schedules), with moment decays ``betas``."""
    return keras.optimizers.Adam(schedules.learning_rate(learning_rate, halving_steps),
                                 beta_1=betas[0], beta_2=betas[1], epsilon=epsilon)
