"""The titration of real images into set B, as training sees it: ``real_fraction`` in the logs.

The schedule itself is :func:`abc_tf.schedules.real_fraction`; the family's streams draw
their real images by it, and the callback here logs it at the trained step.
"""

from __future__ import annotations

import keras

from abc_tf import schedules
from abc_tf.config import ExperimentConfig


class TitrationLogger(keras.callbacks.Callback):
    """Adds ``real_fraction`` to the epoch logs: the titration schedule of the pose data
    (:func:`abc_tf.schedules.real_fraction`) at the last trained step, so a TensorBoard
    callback placed AFTER this one plots it next to the loss. The value is computed from the
    optimizer's step, the same formula the data pipeline uses, so it stays right after resume.
    """

    def __init__(self, target: float, interval: int, total_steps: int):
        super().__init__()
        self.target, self.interval, self.total_steps = float(target), int(interval), int(total_steps)

    def on_epoch_end(self, epoch, logs=None):
        if logs is None:
            return
        step = max(0, int(keras.ops.convert_to_numpy(self.model.optimizer.iterations)) - 1)
        logs["real_fraction"] = schedules.real_fraction(step, self.target, self.interval, self.total_steps)


def training_callbacks(config: ExperimentConfig) -> list[keras.callbacks.Callback]:
    """Callbacks training adds before its TensorBoard callback: the titration logger
    (``real_fraction`` in TensorBoard)."""
    return [TitrationLogger(config.data.real_fraction, config.data.titration_interval, config.trainer.steps)]
