"""Evaluation as declared tasks: what ``evaluate.py`` runs on a run directory.

A data family names the task that evaluates a representation on its labels (task_registry).
A method may name measures of its own networks (method_measures). Both read an
:class:`EvaluationSettings` (evaluation_settings), never flags. run_evaluation runs them on one
run into metrics.json; seeds and checkpoint_curves run it on several. This package names their
public API, which the commands and the training callbacks read.
"""

from __future__ import annotations

from abc_tf.evaluation.tasks.checkpoint_curves import evaluate_checkpoints
from abc_tf.evaluation.tasks.evaluation_settings import Evaluate, EvaluationSettings
from abc_tf.evaluation.tasks.run_evaluation import evaluate_run
from abc_tf.evaluation.tasks.seeds import evaluate_seeds
from abc_tf.evaluation.tasks.task_registry import (
    TASKS,
    Task,
    declared_task,
    labelled_sample,
    offers_labelled_sample,
    task_of,
)

__all__ = [
    "TASKS",
    "Evaluate",
    "EvaluationSettings",
    "Task",
    "declared_task",
    "evaluate_checkpoints",
    "evaluate_run",
    "evaluate_seeds",
    "labelled_sample",
    "offers_labelled_sample",
    "task_of",
]
