"""An evaluation where TensorBoard users look: measures as scalars, figures as images.

They go to ``<out_dir>/logs/evaluation``, beside metrics.json (``tasks.evaluate_run``).
By default out_dir is the run directory, so this is the run's own ``logs`` folder, where train.py
wrote the run's hparams. TensorBoard's HParams plugin takes each folder holding hparams as a table
row. Every scalar tag of its subfolders is a metric column (tag, group), valued by its last scalar.
Source: ``tensorboard/plugins/hparams/backend_context.py``, ``_compute_metric_names``.
So ``tensorboard --logdir runs`` shows each run's end measures beside its settings, in group
"evaluation" next to "train" and "isolation". Figures appear in the Images tab.
Another output folder, e.g. ``--output_dir`` or a seed's folder under it, gets the run's hparams in
its own ``logs``. It is then a row of its own, named after the folder.
The step is the run's last training step, so the measures sit at the end of the training curves.
"""

from __future__ import annotations

import math
import os
from typing import Any, Sequence

import tensorflow as tf

from abc_tf.evaluation import progress
from abc_tf.methods.monitor import TrainingMonitor
from abc_tf.runs.hparams import HParamsLogger
from abc_tf.runs.run_dir import TrainedRun

LOG_SUBDIR = "evaluation"  # under <out_dir>/logs, next to train/ and isolation/
# Entries of metrics.json that hold settings, bookkeeping or detail, not measures: the config (the
# table row's hparams), the evaluation's settings and sizes, timings, chance levels, and the
# disentanglement scores' per-factor detail (their headline is under "scores"). Each would be a
# column of the HParams table.
NOT_MEASURES = (
    "config",
    "settings",
    "sigma",
    "unit",
    "length_scale",
    "embedding_dim",
    "num_images",
    "spread",
    "chance",
    "codes",
    "seconds",
    "encode_seconds",
    "results",
)


def log_dir(out_dir: str) -> str:
    return os.path.join(out_dir, "logs", LOG_SUBDIR)


def scalars(metrics: dict[str, Any], prefix: str = "") -> dict[str, float]:
    """The numeric leaves of ``metrics`` by tag: keys joined by "/" after ``prefix``.

    E.g. ``mine/floor_hue``, ``probe/floor_hue/accuracy``, ``disentanglement/scores/mig``.
    The HParams table shows them as ``evaluation.mine/floor_hue`` beside ``train.loss``.
    Lists, strings, booleans and non-finite values are left out. So are the entries of
    :data:`NOT_MEASURES`: settings, sizes, timings, chance levels and per-factor detail.
    """
    found = {}
    for key, value in metrics.items():
        tag = f"{prefix}{key}"
        if key in NOT_MEASURES:
            continue
        if isinstance(value, dict):
            found.update(scalars(value, tag + "/"))
        elif isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
            found[tag] = float(value)
    return found


def image_tag(path: str, out_dir: str) -> str:
    relative = os.path.relpath(path, out_dir)
    if relative.startswith(os.pardir):  # a figure outside the output folder: its name
        relative = os.path.basename(path)
    return os.path.splitext(relative)[0].replace(os.sep, "/")


def write(run: TrainedRun, out_dir: str, metrics: dict[str, Any], figures: Sequence[str] = ()) -> str:
    """Writes :func:`scalars` of ``metrics`` and the PNGs ``figures`` into :func:`log_dir` at the last step.

    The step is the config's ``trainer.steps``, or a checkpoint's own step. An image's tag is the PNG's path
    below out_dir without .png, e.g. ``pca`` or ``untrained/pca``. Writes the run's hparams into
    ``out_dir/logs`` when that is not the run's own folder. Records the event files written
    (``progress.wrote``) and returns the folder.
    """
    step = run.step if run.step is not None else run.config.trainer.steps
    folder = log_dir(out_dir)
    before = _event_files(out_dir)
    if os.path.realpath(out_dir) != os.path.realpath(run.run_dir):
        row = HParamsLogger(run.config, os.path.dirname(folder))
        row.on_train_begin()  # writes the hparams now (no training follows)
        row.on_train_end()  # and closes its writer
    monitor = TrainingMonitor(folder)  # the package's one summary writer (abc_tf.methods.monitor)
    with monitor.writer.as_default(step=step):
        for tag, value in scalars(metrics).items():
            tf.summary.scalar(tag, value)
        for path in figures:
            image = tf.image.decode_png(tf.io.read_file(path), channels=3)
            tf.summary.image(image_tag(path, out_dir), image[tf.newaxis])
    monitor.on_train_end()  # closes the writer
    for path in sorted(_event_files(out_dir) - before):
        progress.wrote(path)
    return folder


def _event_files(out_dir: str) -> set[str]:
    """The TensorBoard event files in ``out_dir/logs`` and :func:`log_dir`."""
    folders = (os.path.join(out_dir, "logs"), log_dir(out_dir))
    return {
        os.path.join(folder, name)
        for folder in folders
        if os.path.isdir(folder)
        for name in os.listdir(folder)
        if name.startswith("events.out.tfevents.")
    }
