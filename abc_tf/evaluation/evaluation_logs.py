"""An evaluation where TensorBoard users look: a run's measures as scalars and its figures as
images in ``<out_dir>/logs/evaluation``, beside metrics.json (``tasks.evaluate_run``).

With evaluate.py's default output folder, the run directory, that is the run's own ``logs``
folder, where train.py wrote the run's hparams (abc_tf.runs.hparams). TensorBoard's HParams
plugin takes each folder holding hparams as one row of its table and every scalar tag of that
folder's subfolders as a metric column, (tag, group) with the group the subfolder below it
(``tensorboard/plugins/hparams/backend_context.py``: ``_compute_metric_names``), valued by the
tag's last scalar. So ``tensorboard --logdir runs`` shows each run's end measures in the HParams
table beside its settings (group "evaluation", next to "train" and "isolation"), and its figures
in the Images tab. An output folder other than the run directory (``--output_dir``, a seed's
folder under it) gets the run's hparams in its own ``logs`` as well: it is a row of its own,
named after the folder, so it shows in the table too.

Step: the run's last training step (its config's ``trainer.steps``; a checkpoint's own step),
so the measures sit at the end of the training curves.

Tags: metrics.json's numeric leaves joined by "/" (``mine/floor_hue``, ``probe/floor_hue/accuracy``,
``disentanglement/scores/mig``, ``untrained/mine/floor_hue``), which the HParams table shows as
``evaluation.mine/floor_hue`` beside ``train.loss``; lists, strings, booleans, non-finite values
and the entries of :data:`NOT_MEASURES` (settings, sizes, timings, chance levels, per-factor
detail) are left out. Images: the PNG's path below out_dir, without .png (``pca``,
``untrained/pca``).
"""

from __future__ import annotations

import math
import os
from typing import Any, Sequence

import tensorflow as tf

from abc_tf.evaluation import progress
from abc_tf.methods.monitor import TrainingMonitor
from abc_tf.runs.hparams import HParamsLogger
from abc_tf.runs.run_dir import Run

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
    """The numeric leaves of ``metrics`` by tag (``key/key/...`` after ``prefix``), as the module
    docstring says."""
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


def write(run: Run, out_dir: str, metrics: dict[str, Any], figures: Sequence[str] = ()) -> str:
    """Writes :func:`scalars` of ``metrics`` and the PNG files ``figures`` at the run's last step
    into :func:`log_dir` (and the run's hparams into ``out_dir/logs`` when that is not the run's
    own folder); records the event files written (``progress.wrote``); returns the folder."""
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
