"""abc_tf.evaluation.tasks: a family's declared task and a method's declared measures run on a
run, with settings and no flags; a task registered at test time is found like the built-in ones."""

from __future__ import annotations

import dataclasses
import json
import os

import numpy as np
import pytest

from abc_tf import data, methods
from abc_tf.evaluation import tasks
from abc_tf.evaluation.tasks.factor_isolation import IsolationSettings
from abc_tf.runs.run_dir import load_run
from evaluate_helpers import evaluate_each
from folder_helpers import config_for, make_folder, write_stand_in_run
from toy_family import FAMILY


pytestmark = pytest.mark.slow


def test_every_registered_family_and_method_names_a_known_task():
    for name in data.DATA_FAMILIES:
        assert data.get_family(name).evaluation_task in tasks.TASKS, name
    for name in methods.METHODS:
        measures = methods.get_method(name).measures
        assert not measures or callable(tasks.measures_of(measures)), name


def test_settings_refuse_an_unknown_preset_or_score():
    with pytest.raises(ValueError, match="Unknown disentanglement preset 'huge'"):
        tasks.EvaluationSettings(disentanglement="huge").validate()
    with pytest.raises(ValueError, match=r"unknown or no scores \['irs'\]"):
        tasks.EvaluationSettings(disentanglement_scores=("mig", "irs")).validate()
    with pytest.raises(ValueError, match="num_images must be at least 10"):
        tasks.EvaluationSettings(isolation=IsolationSettings(num_images=3)).validate()


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
        tasks.evaluate_run(run, "unused", tasks.EvaluationSettings())
    monkeypatch.setattr("toy_family.FAMILY", dataclasses.replace(FAMILY, evaluation_task="toy_family:FAMILY"))
    with pytest.raises(
        TypeError, match="evaluation_task 'toy_family:FAMILY' is not an abc_tf.evaluation.tasks.Task"
    ):
        tasks.evaluate_run(run, "unused", tasks.EvaluationSettings())


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
    monkeypatch.setattr("test_tasks.own_measure", own_measure, raising=False)  # Method.measures names it
    monkeypatch.setitem(tasks.TASKS, "dimensions", tasks.Task(count_dimensions))
    abc = methods.get_method("abc")
    monkeypatch.setattr(
        "abc_tf.methods.abc.model.METHOD", dataclasses.replace(abc, measures="test_tasks:own_measure")
    )
    settings = tasks.EvaluationSettings(isolation=IsolationSettings(sample_seed=7))
    run = load_run(trained_toy_run.run_dir)
    metrics = tasks.evaluate_run(run, str(tmp_path / "out"), settings)
    assert metrics == {"dimensions": 8, "method": {"headline": {"own": 1.0}}}
    assert json.loads((tmp_path / "out" / "metrics.json").read_text()) == metrics
    assert (tmp_path / "out" / "figure.txt").exists() and seen == [("task", 7), ("measures", "abc")]
    # A saved model (no method networks) gets the family's task only.
    assert tasks.evaluate_run(run, str(tmp_path / "saved"), settings, method_measures=False) == {
        "dimensions": 8
    }


def test_evaluate_py_on_the_user_s_own_folders_without_labels_draws_the_group_retrieval(tmp_path):
    """A folder of groups with no labels.csv: the group probes against untrained, and the
    retrieval grid across groups, the figure a user looks at (evaluate.py's command line)."""
    make_folder(str(tmp_path / "data"), {"alice": 5, "bob": 5, "carol": 5}, image_size=(20, 16))
    config = config_for(tmp_path / "data", image_size=32)
    run_dir = tmp_path / "run"
    write_stand_in_run(run_dir, config)
    [result] = evaluate_each([(tmp_path, [f"--run_dir={run_dir}", "--probe_epochs=1", "--mine_steps=0"])])
    assert result["code"] == 0, result["stderr"][-3000:]
    assert "[evaluate] retrieval grid across groups ..." in result["stdout"]
    metrics = json.loads((run_dir / "metrics.json").read_text())
    assert sorted(metrics["retrieval"]["groups"]) == ["alice", "bob", "carol"]
    assert np.array(metrics["retrieval"]["trained"]["indices"]).shape == (3, 3)
    assert os.path.getsize(metrics["figures"]["retrieval"]) > 1000 and set(metrics["trained"]) == {"group"}
