"""abc_tf.evaluation.tasks.run_evaluation: a family's declared task and a method's declared measures
run on a run, with settings and no flags, into metrics.json; a task registered at test time is found
like the built-in ones."""

from __future__ import annotations

import dataclasses
import json
import os

import pytest

from abc_tf import methods
from abc_tf.evaluation.tasks import task_registry
from abc_tf.evaluation.tasks.evaluation_settings import EvaluationSettings
from abc_tf.evaluation.tasks.factor_isolation import IsolationSettings
from abc_tf.evaluation.tasks.run_evaluation import evaluate_run
from abc_tf.runs.run_dir import load_run
from toy_family import FAMILY


pytestmark = pytest.mark.slow


def test_a_task_and_measures_registered_at_test_time_run_and_write_metrics(
    trained_toy_run, toy_family, monkeypatch, tmp_path, capsys
):
    seen = []

    def count_dimensions(run, out_dir, settings):
        seen.append(("task", settings.sample_seed))
        with open(os.path.join(out_dir, "figure.txt"), "w") as handle:
            handle.write("a figure")
        return {"dimensions": int(run.encoder.output_shape[-1])}

    def own_measure(run, out_dir, settings):
        seen.append(("measures", run.config.method.name))
        return {"headline": {"own": 1.0}}

    monkeypatch.setattr("toy_family.FAMILY", dataclasses.replace(FAMILY, evaluation_task="dimensions"))
    monkeypatch.setattr(
        "test_run_evaluation.own_measure", own_measure, raising=False
    )  # Method.measures names it
    monkeypatch.setitem(task_registry.TASKS, "dimensions", task_registry.Task(count_dimensions))
    abc = methods.get_method("abc")
    monkeypatch.setattr(
        "abc_tf.methods.abc.model.METHOD",
        dataclasses.replace(abc, measures="test_run_evaluation:own_measure"),
    )
    settings = EvaluationSettings(isolation=IsolationSettings(sample_seed=7))
    run = load_run(trained_toy_run.run_dir)
    metrics = evaluate_run(run, str(tmp_path / "out"), settings)
    assert metrics == {"dimensions": 8, "method": {"headline": {"own": 1.0}}}
    assert json.loads((tmp_path / "out" / "metrics.json").read_text()) == metrics
    assert (tmp_path / "out" / "figure.txt").exists() and seen == [("task", 7), ("measures", "abc")]
    # A saved model (no method networks) gets the family's task only.
    assert evaluate_run(run, str(tmp_path / "saved"), settings, method_measures=False) == {"dimensions": 8}
