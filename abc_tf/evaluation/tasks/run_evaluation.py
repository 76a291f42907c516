"""One run's evaluation: its family's task, then its method's own measures, into metrics.json.

:func:`evaluate_run` also writes the measures and figures to TensorBoard logs beside metrics.json.
It records every file written, for evaluate.py's closing list.
"""

from __future__ import annotations

import os

from abc_tf import json_files, methods
from abc_tf.evaluation import evaluation_logs, progress
from abc_tf.evaluation.tasks.evaluation_settings import EvaluationSettings
from abc_tf.evaluation.tasks.method_measures import measures_of
from abc_tf.evaluation.tasks.task_registry import task_of
from abc_tf.runs.run_dir import TrainedRun
from abc_tf.runs.checks import measures_skipped

METRICS_FILE = "metrics.json"


def evaluate_run(
    run: TrainedRun,
    out_dir: str,
    settings: EvaluationSettings,
    method_measures: bool = True,
    tensorboard: bool = True,
) -> dict:
    """Runs the family's task on ``run``, writes ``out_dir/metrics.json`` and returns the metrics.

    method_measures: also run the method's own measures. Needs the method's own networks.
    tensorboard: also write the metrics and figures to ``out_dir/logs/evaluation``.
    """
    os.makedirs(out_dir, exist_ok=True)
    with progress.recording() as written:
        metrics = task_of(run.config).evaluate(run, out_dir, settings)
        measures = methods.get_method(run.config.method.name).measures
        skipped = measures_skipped(run.config)
        if method_measures and measures and "method" not in skipped:
            metrics["method"] = measures_of(measures)(run, out_dir, settings)
        if skipped:
            metrics["skipped"] = skipped
            for name, reason in skipped.items():
                print(f"skipped: {name} measures: {reason}.", flush=True)
        json_files.write_json(os.path.join(out_dir, METRICS_FILE), metrics, sort_keys=True)
        progress.wrote(os.path.join(out_dir, METRICS_FILE))
    if tensorboard:
        evaluation_logs.write(run, out_dir, metrics, [path for path in written if path.endswith(".png")])
    return metrics
