"""PMP's training monitor and the subspace-usage count it reads.

PMPModel (abc_tf/methods/pmp/model.py) counts the changed subspace of each training pair in a
:class:`SubspaceUsage`. :class:`PMPMonitor` writes those counts and the model's swap grid to
TensorBoard.
"""

from __future__ import annotations

import keras
import numpy as np
import tensorflow as tf

from abc_tf.config import ExperimentConfig
from abc_tf.methods.monitor import TrainingMonitor

GRID_PAIRS = 4  # pairs shown in the image grid


class SubspaceUsage(keras.metrics.Metric):
    """How often each subspace was the changed one (i*) since the last reset: counts [k].

    It is kept out of the model's ``metrics``. Keras resets those every epoch and the trainer's
    logger averages them as scalars. :class:`PMPMonitor` reads and resets it every log step.
    """

    def __init__(self, num_subspaces: int, name: str = "subspace_usage", **kwargs):
        super().__init__(name=name, **kwargs)
        self.counts = self.add_variable(
            shape=(num_subspaces,), initializer="zeros", name="counts", aggregation="sum"
        )

    def update_state(self, changed):
        self.counts.assign_add(tf.reduce_sum(tf.cast(changed, self.counts.dtype), axis=0))

    def result(self):
        return self.counts / tf.maximum(tf.reduce_sum(self.counts), 1.0)

    def reset_state(self):
        self.counts.assign(tf.zeros_like(self.counts))


class PMPMonitor(TrainingMonitor):
    """Writes PMP's histograms and grids under ``log_dir``, on pairs of the family's own stream.

    Every ``log_every`` steps: the subspace-usage histogram of the training pairs, and the
    fraction per subspace as scalars ``subspace_usage/<i>``. Every ``eval_every`` steps and at
    the last step: the grid of :meth:`PMPModel.swap_grid`. ``eval_every`` 0 means only at the
    end.
    """

    def __init__(self, config: ExperimentConfig, log_dir: str):
        super().__init__(log_dir, config.trainer.steps)
        self.config = config

    def on_train_begin(self, logs=None):
        self.model.usage.reset_state()

    def write(self, step: int, logs: dict) -> None:
        if self.due(step, self.config.trainer.log_every):
            counts = np.asarray(self.model.usage.counts.numpy(), np.float64)
            if counts.sum() > 0:
                fractions = counts / counts.sum()
                indices = np.repeat(np.arange(counts.size), np.rint(counts).astype(np.int64))
                tf.summary.histogram("subspace_usage", indices, buckets=counts.size)
                for i, value in enumerate(fractions):
                    tf.summary.scalar(f"subspace_usage/{i}", value)
            self.model.usage.reset_state()
        if self.due(step, self.config.trainer.eval_every):
            pairs = self.fixed_batch(self.config, "pairs", GRID_PAIRS)
            grid = self.model.swap_grid(pairs["x1"], pairs["x2"])
            tf.summary.image(
                "reconstruction_and_swaps",
                grid[None],
                max_outputs=1,
                description="per pair: x1, its reconstruction, x1 with subspace i of x2 (i = 1..k), "
                "the reconstruction of x2, x2",
            )
