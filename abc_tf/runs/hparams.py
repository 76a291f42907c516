"""A run's settings on TensorBoard's HParams dashboard, to compare a folder of runs there.

Each run's config appears beside the measures it logs. TensorBoard pairs each run's hparams with the
scalars of that run's folder, such as ``logs/train`` losses and ``logs/isolation`` measures.
It infers the table's columns from all runs under ``--logdir``.
``tensorboard --logdir runs`` shows every run trained into ``runs/``.
"""

from __future__ import annotations

import os

from tensorboard.plugins.hparams import api as hp

from abc_tf.config import ExperimentConfig
from abc_tf.methods.monitor import TrainingMonitor


def hparam_values(config: ExperimentConfig) -> dict[str, bool | int | float | str]:
    """Every field of ``config`` by part, e.g. ``trainer.steps``, and the preset's ``name``.

    Values are bool, int, float or str, as the HParams dashboard takes them.
    """
    values = {"name": config.name, **config.flat()}
    return {name: value for name, value in values.items() if isinstance(value, (bool, int, float, str))}


class HParamsLogger(TrainingMonitor):
    """Writes ``config``'s hparams into ``log_dir``, the run's ``logs`` folder, when training starts.

    A resumed run writes them again, so the dashboard shows its latest settings.
    """

    def __init__(self, config: ExperimentConfig, log_dir: str):
        super().__init__(log_dir, config.trainer.steps)
        self.config = config

    def on_train_begin(self, logs=None):
        trial = os.path.basename(os.path.dirname(os.path.normpath(self.log_dir)))
        with self.writer.as_default():
            hp.hparams(hparam_values(self.config), trial_id=trial)
        self.writer.flush()
