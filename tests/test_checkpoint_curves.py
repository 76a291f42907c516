"""abc_tf.evaluation.tasks.checkpoint_curves: each checkpoint of a run evaluated into its own
folder, and their measures against the step in curve.json and curve.png."""

from __future__ import annotations

import dataclasses
import json

import pytest

from abc_tf.evaluation.tasks import task_registry
from abc_tf.evaluation.tasks.checkpoint_curves import evaluate_checkpoints
from abc_tf.evaluation.tasks.evaluation_settings import EvaluationSettings
from abc_tf.runs import checkpoint_files
from toy_family import FAMILY

pytestmark = pytest.mark.slow


def test_every_kept_checkpoint_is_evaluated_and_drawn_against_its_step(
    trained_toy_run, toy_family, monkeypatch, tmp_path
):
    seen = []

    def one_nn(run, out_dir, settings):
        seen.append(out_dir)
        return {"digit_clusters": {"nearest_neighbour_accuracy": 0.5}}

    monkeypatch.setattr("toy_family.FAMILY", dataclasses.replace(FAMILY, evaluation_task="one_nn"))
    monkeypatch.setitem(task_registry.TASKS, "one_nn", task_registry.Task(one_nn))
    steps = [step for step, _ in checkpoint_files.list_checkpoints(trained_toy_run.run_dir)]
    curve = evaluate_checkpoints(
        trained_toy_run.run_dir, str(tmp_path), EvaluationSettings(), "all", {"1-NN digit accuracy": 0.9}
    )
    assert curve["steps"] == steps and len(steps) == 2
    assert curve["measures"] == {"1-NN digit accuracy": [0.5, 0.5]}
    assert curve["references"] == {"1-NN digit accuracy": 0.9}
    assert seen == [str(tmp_path / "checkpoints" / f"step_{step}") for step in steps]
    assert json.loads((tmp_path / "curve.json").read_text()) == curve and (tmp_path / "curve.png").is_file()
