"""Elastic-InfoGAN's training monitor; see the module docstring of
abc_tf.methods.elastic_infogan.model.

It logs the learned prior against the training images' class proportions and the generated
images' diversity. It warns of a collapsed prior or mode collapse, and draws a sample grid per
categorical code.
"""

from __future__ import annotations

import json
import logging
import os

import numpy as np
import tensorflow as tf

from abc_tf import data, json_files
from abc_tf.config import ExperimentConfig
from abc_tf.methods.monitor import TrainingMonitor
from abc_tf.methods.elastic_infogan.networks import NUM_CATEGORIES

_log = logging.getLogger(__name__)

# Failure detection [ours]: a prior whose largest class exceeds 0.9 has
# collapsed onto one code; generated images whose pixel spread over z is below a fifth of the
# real images' are a collapsed mode.
PRIOR_COLLAPSE, DIVERSITY_COLLAPSE = 0.9, 0.2
PRIOR_FILE, CLASS_SPLIT_FILE, WARNINGS_FILE = "prior.json", "class_split.json", "training_warnings.json"
GRID_COLUMNS = 10  # noise draws per code in the sample grid


def diversity(generated: np.ndarray, real: np.ndarray) -> float:
    """Mean per-pixel standard deviation of the generated images over the batch, relative to the
    real images'.

    It is near 0 when G makes one image whatever z and c: mode collapse.
    """
    real_spread = float(np.mean(np.std(np.asarray(real, np.float64), axis=0)))
    return float(np.mean(np.std(np.asarray(generated, np.float64), axis=0))) / max(real_spread, 1e-12)


def failures(prior: np.ndarray, generated_diversity: float) -> list[str]:
    """What looks broken: a collapsed prior, or mode collapse. [] when nothing is."""
    found = []
    if float(np.max(prior)) > PRIOR_COLLAPSE:
        found.append(
            f"collapsed prior: code {int(np.argmax(prior))} has probability {float(np.max(prior)):.3f} > "
            f"{PRIOR_COLLAPSE}"
        )
    if generated_diversity < DIVERSITY_COLLAPSE:
        found.append(
            f"mode collapse: generated images vary {generated_diversity:.3f} times as much as real ones "
            f"(< {DIVERSITY_COLLAPSE})"
        )
    return found


class InfoGANMonitor(TrainingMonitor):
    """The prior, the diversity, the failure checks and the per-code sample grid.

    It writes every ``log_every`` steps and at the end, to the trainer's logs and to TensorBoard
    under ``log_dir``. prior.json, class_split.json and training_warnings.json go to the run
    directory. The true proportions and the class split come from the data family, where it
    declares them.
    """

    def __init__(self, config: ExperimentConfig, log_dir: str):
        super().__init__(log_dir, config.trainer.steps)
        self.config = config
        self.run_dir = os.path.dirname(os.path.dirname(log_dir))  # log_dir = run_dir/logs/elastic_infogan
        self._true, self._real = None, None
        rng = np.random.default_rng(config.trainer.seed + 1)
        self._z = rng.standard_normal((GRID_COLUMNS, config.method.noise_dim)).astype(np.float32)
        self._diversity_z = rng.standard_normal(
            (NUM_CATEGORIES * GRID_COLUMNS, config.method.noise_dim)
        ).astype(np.float32)
        self.warnings: list[dict] = []
        self._history: list[dict] = []  # the prior at every log step, for prior.json

    def on_train_begin(self, logs=None):
        family = data.get_family(self.config.data.family)
        if family.class_proportions is not None:
            self._true = family.class_proportions(self.config)
        split = (
            family.class_split_description(self.config)
            if family.class_split_description is not None
            else None
        )
        if split is not None:
            json_files.write_json(os.path.join(self.run_dir, CLASS_SPLIT_FILE), split)
        if family.class_labelled_images is not None:  # the reference of the diversity check
            images = family.class_labelled_images(self.config).train_images[..., 0]
            rows = np.random.default_rng(self.config.trainer.seed + 2).choice(
                len(images), min(len(images), 500), replace=False
            )
            self._real = images[rows].astype(np.float32) / 255.0
        path = os.path.join(self.run_dir, WARNINGS_FILE)
        if os.path.isfile(path):  # a resumed run keeps what was found before
            with open(path) as handle:
                self.warnings = json.load(handle)
        path, start = os.path.join(self.run_dir, PRIOR_FILE), self.step()
        if os.path.isfile(path):  # a resumed run keeps the prior's history up to its checkpoint
            with open(path) as handle:
                self._history = [
                    entry for entry in json.load(handle).get("history", []) if entry["step"] <= start
                ]

    def _generated(self) -> np.ndarray:
        codes = np.repeat(np.eye(NUM_CATEGORIES, dtype=np.float32), GRID_COLUMNS, axis=0)
        return self.model.generate(tf.constant(self._diversity_z), tf.constant(codes)).numpy()[..., 0]

    def write(self, step: int, logs: dict) -> None:
        if not self.due(step, self.config.trainer.log_every):
            return
        prior = self.model.prior()
        spread = diversity(self._generated(), self._real) if self._real is not None else 1.0
        logs.update({"prior_max": float(prior.max()), "generated_diversity": spread})
        for k, value in enumerate(prior):
            tf.summary.scalar(f"prior/{k}", value)
        if self._true is not None:
            learned, true = np.sort(prior)[::-1], np.sort(self._true)[::-1]
            for i in range(NUM_CATEGORIES):
                tf.summary.scalar(f"prior_sorted/learned_{i}", learned[i])
                tf.summary.scalar(f"prior_sorted/true_{i}", true[i])
            logs["prior_sorted_l1"] = float(np.abs(learned - true).sum())
        if not self._history or self._history[-1]["step"] < step:
            self._history.append({"step": step, "prior": [float(p) for p in prior]})
        json_files.write_json(
            os.path.join(self.run_dir, PRIOR_FILE),
            {
                "step": step,
                "prior": [float(p) for p in prior],
                "true_proportions": None if self._true is None else [float(p) for p in self._true],
                "history": self._history,
            },
        )
        for problem in failures(prior, spread):
            _log.warning("Elastic-InfoGAN at step %d: %s", step, problem)
            print(f"WARNING: Elastic-InfoGAN at step {step}: {problem}")
            self.warnings.append({"step": step, "problem": problem})
            json_files.write_json(os.path.join(self.run_dir, WARNINGS_FILE), self.warnings)
        tf.summary.image(
            "samples_per_code",
            self.model.code_grid(self._z)[None],
            max_outputs=1,
            description="row k: categorical code k, one column per noise vector",
        )
