"""Keras callbacks that watch factor isolation while an encoder trains.

:class:`FactorIsolationCallback` measures, every N optimizer steps, a cheap version of the
docs/PAPERS.md section 4 measures on a fixed labelled sample (probes, optionally a short MINE run, the
histogram estimate when d <= 3) and writes them to TensorBoard, and at the end of training the files
of TensorBoard's embedding projector, so its tab shows the final embeddings coloured by any factor.
"""

from __future__ import annotations

import os
from typing import Sequence

import keras
import numpy as np
import tensorflow as tf
from tensorboard.plugins import projector

from abc_tf.config import ExperimentConfig
from abc_tf.evaluation.tasks import factor_isolation
from abc_tf.evaluation.estimators import histogram_mi, mine, noise, plots, probes
from abc_tf.evaluation import progress, tasks
from abc_tf.methods.base import to_float_images
from abc_tf.methods.monitor import TrainingMonitor
from abc_tf.runs import training_logs
from abc_tf.runs.run_dir import ENCODER, embed

LOG_SUBDIR = "isolation"  # under run_dir/logs, next to Keras' train/ folder
PROJECTOR_TENSORS = "projector_embeddings.tsv"
PROJECTOR_METADATA = "projector_metadata.tsv"
PROJECTOR_SPRITE = "projector_sprite.png"
PROJECTOR_CONFIG = "projector_config.pbtxt"  # the name visualize_embeddings writes

# Cheap defaults: a measurement costs a few seconds on 2 CPU cores.
CHEAP_PROBES = probes.ProbeSettings(epochs=10, batch_size=128)
CHEAP_MINE = mine.MineSettings(learning_rate=1e-3, steps=300, eval_samples=16_384)
# The measurement at the end of training, which the run's summary shows (abc_tf.evaluation.run_summary),
# prints how far it is every so many seconds: nothing when it takes less.
SUMMARY_PROGRESS_EVERY = 5.0
SUMMARY_PROGRESS_PREFIX = "[summary]"


class FactorIsolationCallback(TrainingMonitor):
    """Every ``every_steps`` optimizer steps: per-factor probes (and MINE) to TensorBoard.

    Args:
      images: uint8 (or [0, 1] float) [N, H, W, C], the fixed labelled sample.
      factors: int [N, F] factor indices of those images.
      names: F factor names.
      length_scale: noise sigma of the measures (the loss's length scale); None for methods
        without one: then 0.1 x the embeddings' own spread at each measurement
        (abc_tf.evaluation.tasks.factor_isolation.noise_sigma's rule). Each record holds its "sigma".
      log_dir: folder of the summaries and projector files.
      every_steps: steps between measurements (also measured before the first step); 0: one
        measurement at the end of training only (the run's summary, abc_tf.evaluation.run_summary).
      inactive: factors the run drops (shaded in the figures).
      num_classes: values per factor (chance levels); default: distinct values seen.
      probe_settings / mine_settings: None skips that measure.
      projector_points: images in the projector files (0: none written).
      sprite_size: thumbnail side in pixels (sprite at most 8192 px wide).
    """

    def __init__(
        self,
        images: np.ndarray,
        factors: np.ndarray,
        names: Sequence[str],
        length_scale: float | None,
        log_dir: str,
        every_steps: int,
        inactive: Sequence[str] = (),
        num_classes: Sequence[int] | None = None,
        probe_settings: probes.ProbeSettings | None = CHEAP_PROBES,
        mine_settings: mine.MineSettings | None = CHEAP_MINE,
        projector_points: int = 1024,
        sprite_size: int = 32,
        seed: int = 0,
    ):
        super().__init__(log_dir)  # it measures on its own schedule (_maybe_measure)
        if every_steps < 0:
            raise ValueError(f"every_steps must be >= 0 (0: only at the end of training), got {every_steps}.")
        factors = np.asarray(factors)
        if len(images) != len(factors) or factors.ndim != 2 or factors.shape[1] != len(names):
            raise ValueError(
                f"Labelled sample mismatch: {len(images)} images, "
                f"factors {factors.shape}, {len(names)} names."
            )
        if (
            projector_points < 0
            or sprite_size <= 0
            or int(np.ceil(np.sqrt(projector_points))) * sprite_size > 8192
        ):
            raise ValueError(
                "projector_points and sprite_size must give a sprite of at most 8192 x 8192 pixels."
            )
        self.images = images
        self.factors = factors
        self.names = list(names)
        self.length_scale = None if length_scale is None else float(length_scale)
        self.every_steps = int(every_steps)
        self.inactive = list(inactive)
        self.num_classes = num_classes
        self.probe_settings = probe_settings
        self.mine_settings = mine_settings
        self.projector_points = int(projector_points)
        self.sprite_size = int(sprite_size)
        self.seed = seed
        self._mine: mine.MineEstimator | None = None
        self._next_step = 0
        self.history: list[dict] = []  # every measurement, also returned to Python callers

    def _encoder(self) -> keras.Model:
        return self.model.networks()[ENCODER]

    def _run_dir(self) -> str:
        return os.path.dirname(os.path.dirname(self.log_dir))  # log_dir is run_dir/logs/LOG_SUBDIR

    def measure(self, step: int) -> dict:
        """Embeds the sample, computes the measures and writes them at ``step``; returns them."""
        embeddings = embed(self._encoder(), self.images).astype(np.float64)
        if not np.all(np.isfinite(embeddings)):
            # The loss can stay finite while the weights overflow (a learning rate far too high):
            # a diverged run, stopped as a NaN loss is, not a bad input.
            raise training_logs.non_finite_stop(
                "The encoder's embeddings of the run's labelled sample became NaN or infinite at step "
                f"{step} although the loss stayed finite: the weights diverged",
                step,
                self._run_dir(),
                "its newest checkpoint (it may hold the diverged weights)",
            )
        spread = noise.spread(embeddings)
        sigma = (
            self.length_scale if self.length_scale is not None else factor_isolation.RELATIVE_NOISE * spread
        )
        record: dict = {"step": step, "spread": spread, "sigma": sigma}
        # Without a length scale, measured in units of the spread (factor_isolation.measuring_unit).
        unit = 1.0 if self.length_scale is not None else max(spread, 1e-12)
        measured, measured_sigma = embeddings / unit, sigma / unit
        if self.probe_settings is not None:
            result = probes.probe_accuracies(
                measured,
                self.factors,
                measured_sigma,
                self.names,
                self.num_classes,
                self.probe_settings,
                self.seed,
            )
            record["probe_accuracy"] = dict(zip(self.names, result.accuracy.tolist()))
        if self.mine_settings is not None:
            if self._mine is None:  # built and traced once in the process, reused by every measurement
                self._mine = mine.estimator_for(
                    len(embeddings), int(embeddings.shape[1]), len(self.names), self.mine_settings
                )
            self._mine.set_data(measured, self.factors)
            estimate = self._mine.estimate(measured_sigma, self.seed, weights_seed=self.seed)
            record["mine"] = dict(zip(self.names, estimate.tolist()))
        if embeddings.shape[1] <= 3:
            noisy = noise.add_noise(measured, measured_sigma, np.random.default_rng(self.seed))
            record["histogram"] = dict(
                zip(self.names, histogram_mi.histogram_mutual_information(noisy, self.factors))
            )
        figure = plots.plot_embeddings_pca(
            embeddings, self.factors, self.names, title=f"step {step}", seed=self.seed
        )
        png = plots.figure_to_png(figure)
        with self.writer.as_default(step=step):
            tf.summary.scalar("isolation/embedding_spread", record["spread"])
            for measure in ("probe_accuracy", "mine", "histogram"):
                for name, value in record.get(measure, {}).items():
                    tf.summary.scalar(f"isolation/{measure}/{name}", float(value))
            tf.summary.image("isolation/embeddings_pca", tf.image.decode_png(png)[tf.newaxis])
        self.writer.flush()
        self.history.append(record)
        self._last_embeddings = embeddings
        return record

    def on_train_begin(self, logs=None):
        if not self.every_steps:
            return
        step = self.step()
        # A resumed run continues the schedule where it left off.
        self._next_step = step
        self._maybe_measure()

    def on_train_batch_end(self, batch, logs=None):
        if self.every_steps:
            self._maybe_measure()

    def _maybe_measure(self) -> None:
        step = self.step()
        if step >= self._next_step:
            self.measure(step)
            self._next_step = (step // self.every_steps + 1) * self.every_steps

    def finish(self) -> None:
        step = self.step()
        if not self.history or self.history[-1]["step"] != step:
            # The measurement the end-of-run summary shows; a slow one says how far it is.
            with progress.reporting(SUMMARY_PROGRESS_EVERY, SUMMARY_PROGRESS_PREFIX):
                self.measure(step)
        if self.projector_points:
            write_projector_files(
                self.log_dir,
                self._last_embeddings[: self.projector_points],
                self.factors[: self.projector_points],
                self.names,
                self.images[: self.projector_points],
                self.sprite_size,
            )


def _sprite(images: np.ndarray, size: int) -> np.ndarray:
    """Thumbnails [N, size, size, 3] uint8 tiled row-major into a square sprite image."""
    thumbnails = tf.image.resize(to_float_images(images), (size, size), antialias=True).numpy()
    if thumbnails.shape[-1] == 1:
        thumbnails = np.repeat(thumbnails, 3, axis=-1)
    thumbnails = (np.clip(thumbnails, 0, 1) * 255).round().astype(np.uint8)
    side = int(np.ceil(np.sqrt(len(thumbnails))))
    sprite = np.full((side * size, side * size, 3), 255, np.uint8)
    for index, thumbnail in enumerate(thumbnails):
        row, column = divmod(index, side)
        sprite[row * size : (row + 1) * size, column * size : (column + 1) * size] = thumbnail
    return sprite


def write_projector_files(
    log_dir: str,
    embeddings: np.ndarray,
    factors: np.ndarray,
    names: Sequence[str],
    images: np.ndarray | None = None,
    sprite_size: int = 32,
    tensor_name: str = "embeddings",
) -> str:
    """Writes the embedding projector's files into ``log_dir``; returns the config path.

    embeddings [N, D] -> ``projector_embeddings.tsv`` (one row per point), factors [N, F] ->
    ``projector_metadata.tsv`` (a header row of factor names, then one row per point), images
    [N, H, W, C] -> ``projector_sprite.png``; ``projector_config.pbtxt`` ties them together.
    """
    embeddings = np.asarray(embeddings, dtype=np.float64)
    factors = np.asarray(factors)
    if factors.ndim == 1:
        factors = factors[:, None]
    if len(embeddings) != len(factors) or factors.shape[1] != len(names):
        raise ValueError(
            f"Projector: {len(embeddings)} embeddings, factors {factors.shape}, {len(names)} names."
        )
    os.makedirs(log_dir, exist_ok=True)
    np.savetxt(os.path.join(log_dir, PROJECTOR_TENSORS), embeddings, delimiter="\t", fmt="%.6g")
    with open(os.path.join(log_dir, PROJECTOR_METADATA), "w") as handle:
        # With more than one column the projector expects a header row.
        handle.write("\t".join(names) + "\n")
        for row in factors:
            handle.write("\t".join(str(value) for value in row.tolist()) + "\n")
    config = projector.ProjectorConfig()
    embedding = config.embeddings.add()
    embedding.tensor_name = tensor_name
    embedding.tensor_path = PROJECTOR_TENSORS
    embedding.metadata_path = PROJECTOR_METADATA
    if images is not None:
        if len(images) != len(embeddings):
            raise ValueError(f"Projector: {len(images)} images for {len(embeddings)} embeddings.")
        sprite = _sprite(np.asarray(images), sprite_size)
        tf.io.write_file(os.path.join(log_dir, PROJECTOR_SPRITE), tf.image.encode_png(sprite))
        embedding.sprite.image_path = PROJECTOR_SPRITE
        embedding.sprite.single_image_dim.extend([sprite_size, sprite_size])
    projector.visualize_embeddings(log_dir, config)
    return os.path.join(log_dir, PROJECTOR_CONFIG)


def evaluation_callbacks(config: ExperimentConfig, run_dir: str) -> list[keras.callbacks.Callback]:
    """The factor-isolation callback of ``config`` on the run's labelled sample
    (abc_tf.evaluation.tasks.labelled_samples; none where the family's task has no sample): every
    ``config.trainer.eval_every`` steps, or only at the end when that is 0, so that every such run ends
    with its summary (abc_tf.evaluation.run_summary). Logs go to ``run_dir/logs/isolation``."""
    every = config.trainer.eval_every
    if every < 0:
        raise ValueError(f"eval_every must be >= 0, got {every}.")
    num_images = config.trainer.eval_images
    if num_images < 10:
        raise ValueError(f"--trainer.eval_images must be at least 10, got {num_images}.")
    try:
        sample = tasks.labelled_sample(config, num_images, seed=1234)
    except ValueError as error:  # more than the family holds: the flag that asked, first
        raise ValueError(f"--trainer.eval_images={num_images}: {str(error).rstrip('.')}; lower it.") from None
    if sample is None:
        if every:
            raise ValueError(
                f"--trainer.eval_every={every}: the {config.data.family} data has no labelled sample to "
                "measure on (abc_tf.evaluation.tasks.labelled_samples; folders: a labels.csv column besides "
                "the groups)."
            )
        return []
    length_scale = config.method.length_scale()
    return [
        FactorIsolationCallback(
            sample.images,
            sample.factors,
            sample.names,
            length_scale,
            os.path.join(run_dir, "logs", LOG_SUBDIR),
            every,
            inactive=sample.inactive,
            num_classes=sample.sizes,
            seed=config.trainer.seed,
            projector_points=min(len(sample.images), 1024),
            mine_settings=CHEAP_MINE,
        )
    ]
