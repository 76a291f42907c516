"""Schedules that depend on the training step: learning-rate step decay, real-image titration."""

from __future__ import annotations

import keras
import numpy as np
import tensorflow as tf


def learning_rate(base_rate: float, halving_steps: int) -> float | keras.optimizers.schedules.LearningRateSchedule:
    """base_rate, halved every ``halving_steps`` steps (the paper's pose schedules); constant if 0."""
    if halving_steps <= 0:
        return base_rate
    return keras.optimizers.schedules.ExponentialDecay(
        base_rate, decay_steps=halving_steps, decay_rate=0.5, staircase=True
    )


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
        return float(target) if isinstance(step, (int, np.integer)) else tf.fill(tf.shape(step), tf.constant(target, tf.float32))
    stages = max(1, (int(total_steps) - 1) // int(interval))
    if isinstance(step, (int, np.integer)):
        return float(target) * min(int(step) // int(interval), stages) / stages
    stage = tf.minimum(tf.math.floordiv(tf.cast(step, tf.int64), int(interval)), stages)
    return float(target) * tf.cast(stage, tf.float32) / float(stages)
