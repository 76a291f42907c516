"""The base of the callbacks that write TensorBoard summaries while a method trains.

The methods' monitors and the factor-isolation callback use it. It handles the writer's
lifecycle, the optimizer's step, the steps to write at, and a fixed batch to draw figures of.
"""

from __future__ import annotations

import keras
import numpy as np
import tensorflow as tf

from abc_tf import data
from abc_tf.config import ExperimentConfig


class TrainingMonitor(keras.callbacks.Callback):
    """Writes what :meth:`write` writes under ``log_dir`` at the end of each logging interval, the
    trainer's epoch.

    ``total_steps`` is the run's last step, where every interval is due. 0 means not known; only
    the intervals decide.
    The writer opens on first use and closes after :meth:`finish`, when training ends. So a
    resumed or repeated ``fit`` appends to the same folder.
    """

    def __init__(self, log_dir: str, total_steps: int = 0):
        super().__init__()
        self.log_dir, self.total_steps = log_dir, int(total_steps)
        self._writer = None
        self._fixed: dict[str, dict[str, np.ndarray]] = {}

    @property
    def writer(self) -> tf.summary.SummaryWriter:
        if self._writer is None:
            self._writer = tf.summary.create_file_writer(self.log_dir)
        return self._writer

    def step(self) -> int:
        """The optimizer steps taken so far."""
        return int(keras.ops.convert_to_numpy(self.model.optimizer.iterations))

    def due(self, step: int, every: int) -> bool:
        """Whether an interval of ``every`` steps ends at ``step``. ``every`` 0 means only the last
        step.
        """
        return (0 < self.total_steps <= step) or (every > 0 and step % every == 0)

    def fixed_batch(self, config: ExperimentConfig, batch_format: str, rows: int) -> dict[str, np.ndarray]:
        """The first ``rows`` rows of each entry of the first ``batch_format`` batch of the run's
        family stream.

        The stream's seed is ``config.trainer.seed + 1``. It is drawn once, so every write sees
        the same batch.
        """
        if batch_format not in self._fixed:
            stream = data.get_family(config.data.family).stream(batch_format)
            batch = next(iter(stream(config, config.trainer.seed + 1, 0).take(1)))
            self._fixed[batch_format] = {key: value.numpy()[:rows] for key, value in batch.items()}
        return self._fixed[batch_format]

    def write(self, step: int, logs: dict) -> None:
        """Summaries at the end of an interval, inside the writer's default context at ``step``.

        Entries added to ``logs`` reach the trainer's logger. Nothing by default.
        """
        del step, logs

    def finish(self) -> None:
        """Summaries when training ends, before the writer closes. Nothing by default."""

    def on_epoch_end(self, epoch, logs=None):
        step = self.step()
        with self.writer.as_default(step=step):
            self.write(step, logs if logs is not None else {})
        self.writer.flush()

    def on_train_end(self, logs=None):
        self.finish()
        if self._writer is not None:
            self._writer.close()
            self._writer = None
