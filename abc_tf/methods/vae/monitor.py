"""The VAE's and VITAE's training monitor: reconstruction and traversal grids in TensorBoard.

The grids are drawn by VITAEModel (abc_tf/methods/vae/model.py); :func:`tile` lays them out.
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from abc_tf.config import ExperimentConfig
from abc_tf.methods.monitor import TrainingMonitor

GRID_IMAGES = 8  # images in the reconstruction grid
TRAVERSAL_STEPS = 7  # values per latent dimension, from -2.5 to 2.5 prior standard deviations
TRAVERSAL_RANGE = 2.5


def tile(rows: list[np.ndarray]) -> np.ndarray:
    """Rows of images [n, H, W, C] in [0, 1] -> one uint8 image [rows H, n W, C]."""
    grid = np.concatenate([np.concatenate(list(row), axis=1) for row in rows], axis=0)
    return np.round(np.clip(grid, 0.0, 1.0) * 255.0).astype(np.uint8)


class VITAEMonitor(TrainingMonitor):
    """Writes the reconstruction and traversal grids of :class:`VITAEModel` under ``log_dir``.

    It writes every ``eval_every`` steps and at the last step; 0 means every ``log_every`` steps.
    The images are fixed ones of the family's own "images" stream.
    """

    def __init__(self, config: ExperimentConfig, log_dir: str):
        super().__init__(log_dir, config.trainer.steps)
        self.config = config

    def write(self, step: int, logs: dict) -> None:
        if not self.due(step, self.config.trainer.eval_every or self.config.trainer.log_every):
            return
        images = self.fixed_batch(self.config, "images", GRID_IMAGES)["images"]
        tf.summary.image(
            "reconstructions",
            self.model.reconstruction_grid(images)[None],
            max_outputs=1,
            description="rows: the images, (c_vitae) the aligned images x', the reconstructions "
            "from the posterior means, (VITAE) the appearance templates before the warp",
        )
        tf.summary.image(
            "traversals",
            self.model.traversal_grid(images[0])[None],
            max_outputs=1,
            description="one row per latent dimension, appearance first, then perspective, "
            f"swept over -{TRAVERSAL_RANGE}..{TRAVERSAL_RANGE}",
        )
