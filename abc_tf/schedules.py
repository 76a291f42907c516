"""Schedules that depend on the training step: learning-rate step decay (titration comes with pose)."""

from __future__ import annotations

import keras


def learning_rate(base_rate: float, halving_steps: int) -> float | keras.optimizers.schedules.LearningRateSchedule:
    """base_rate, halved every ``halving_steps`` steps (the paper's pose schedules); constant if 0."""
    if halving_steps <= 0:
        return base_rate
    return keras.optimizers.schedules.ExponentialDecay(
        base_rate, decay_steps=halving_steps, decay_rate=0.5, staircase=True
    )
