"""Schedules that depend on the training step: learning-rate step decay, real-image titration."""

from __future__ import annotations

import keras
import numpy as np
import tensorflow as tf


def learning_rate(
    base_rate: float, halving_steps: int = 0, drop_step: int = 0, drop_factor: float = 0.1
) -> float | keras.optimizers.schedules.LearningRateSchedule:
    """base_rate, halved every ``halving_steps`` steps (the paper's pose schedules) and times
    ``drop_factor`` from step ``drop_step`` on (CC-VAE's authors: / 10 after 80 of 100
    epochs); constant if both are 0."""
    if halving_steps <= 0 and drop_step <= 0:
        return base_rate
    return StepDecay(base_rate, halving_steps, drop_step, drop_factor)


@keras.saving.register_keras_serializable(package="abc_tf")
class StepDecay(keras.optimizers.schedules.LearningRateSchedule):
    """The learning rate of :func:`learning_rate`, a staircase of the optimizer step:
    ``base_rate * 0.5 ** (step // halving_steps) * (drop_factor if step >= drop_step else 1)``
    (a term left out where its steps are 0)."""

    def __init__(
        self, base_rate: float, halving_steps: int = 0, drop_step: int = 0, drop_factor: float = 0.1
    ):
        self.base_rate, self.halving_steps = float(base_rate), int(halving_steps)
        self.drop_step, self.drop_factor = int(drop_step), float(drop_factor)

    def __call__(self, step):
        step = tf.cast(step, tf.int64)
        rate = tf.constant(self.base_rate, tf.float32)
        if self.halving_steps > 0:  # powers of 2: exact in float32
            rate *= tf.pow(0.5, tf.cast(step // self.halving_steps, tf.float32))
        if self.drop_step > 0:
            rate = tf.where(step >= self.drop_step, rate * self.drop_factor, rate)
        return rate

    def get_config(self) -> dict:
        return {
            "base_rate": self.base_rate,
            "halving_steps": self.halving_steps,
            "drop_step": self.drop_step,
            "drop_factor": self.drop_factor,
        }


def real_fraction(step, target: float, interval: int, total_steps: int):
    """Fraction of real images in the unconstrained set B at a training step (titration).

    Supplement S8.3: "The beginning of training is purely synthetic images and then ramping up
    linearly to 10% real images folded into the unconstrained stack, stepping every 4k steps."
    The fraction is a staircase: constant within each block of ``interval`` steps, 0 in the
    first block, rising by equal steps to ``target`` in the last block that starts before
    ``total_steps``:

        stages = max(1, (total_steps - 1) // interval)
        fraction(step) = target * min(step // interval, stages) / stages

    (40k steps, interval 4k: 0, 1/9, ..., 9/9 of the target in steps 36k..40k.) With
    ``interval <= 0`` titration is off: ``target`` from the first step (the "no titration" arm
    of Figs. S4/S5). ``step`` is an int (returns a float) or an integer tensor (returns a
    float32 tensor), so the data pipeline and the logging callback share one formula.
    """
    if interval <= 0:
        return (
            float(target)
            if isinstance(step, (int, np.integer))
            else tf.fill(tf.shape(step), tf.constant(target, tf.float32))
        )
    stages = max(1, (int(total_steps) - 1) // int(interval))
    if isinstance(step, (int, np.integer)):
        return float(target) * min(int(step) // int(interval), stages) / stages
    stage = tf.minimum(tf.math.floordiv(tf.cast(step, tf.int64), int(interval)), stages)
    return float(target) * tf.cast(stage, tf.float32) / float(stages)
