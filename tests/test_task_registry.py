"""abc_tf.evaluation.tasks.task_registry: every family names a registered task (or its own
"module:NAME"), and a name that is neither is refused naming the registered ones."""

from __future__ import annotations

import dataclasses

import pytest

from abc_tf import data, methods
from abc_tf.evaluation.tasks import task_registry
from abc_tf.evaluation.tasks.evaluation_settings import EvaluationSettings
from abc_tf.evaluation.tasks.method_measures import measures_of
from abc_tf.evaluation.tasks.run_evaluation import evaluate_run
from abc_tf.runs.run_dir import load_run
from toy_family import FAMILY


pytestmark = pytest.mark.slow


def test_every_registered_family_and_method_names_a_known_task():
    for name in data.DATA_FAMILIES:
        assert task_registry.declared_task(data.get_family(name).evaluation_task) is not None, name
    for name in methods.METHODS:
        measures = methods.get_method(name).measures
        assert not measures or callable(measures_of(measures)), name


def test_a_family_whose_task_is_not_registered_is_refused_naming_the_tasks(
    trained_toy_run, toy_family, monkeypatch
):
    run = load_run(trained_toy_run.run_dir)
    monkeypatch.setattr("toy_family.FAMILY", dataclasses.replace(FAMILY, evaluation_task="toy_positions"))
    with pytest.raises(
        ValueError,
        match=r"Data family 'toy' names the evaluation task 'toy_positions', which is not "
        r"registered \(abc_tf.evaluation.tasks.TASKS: digit_style, factors, labels, pose, "
        r"or a \"module:NAME\" of its own\)",
    ):
        evaluate_run(run, "unused", EvaluationSettings())
    monkeypatch.setattr("toy_family.FAMILY", dataclasses.replace(FAMILY, evaluation_task="toy_family:FAMILY"))
    with pytest.raises(
        TypeError, match="evaluation_task 'toy_family:FAMILY' is not an abc_tf.evaluation.tasks.Task"
    ):
        evaluate_run(run, "unused", EvaluationSettings())
