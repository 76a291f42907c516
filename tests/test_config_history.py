"""A run directory's config across restarts (abc_tf.runs.config_history): what a rerun may change,
the refusals that name the flag, and config_history.json. Checked directly on small run
directories, and through short toy runs (tests/toy_family.py)."""

from __future__ import annotations

import json
import os
import shutil

import pytest

from abc_tf.runs import checkpoints, config_history, training
from toy_family import CONFIG as TOY, TRAINED

pytestmark = pytest.mark.usefixtures("toy_family")


def write_run(run_dir, config, monkeypatch=None, checkpoint_steps=()):
    """A run directory holding ``config`` and (listed by a stand-in) checkpoints at ``checkpoint_steps``."""
    os.makedirs(run_dir, exist_ok=True)
    config_history.write_config(config, str(run_dir), {}, 0)
    if monkeypatch is not None:
        saved = [
            (step, os.path.join(str(run_dir), "checkpoints", f"ckpt-{step}")) for step in checkpoint_steps
        ]
        monkeypatch.setattr(
            checkpoints, "list_checkpoints", lambda directory: saved if directory == str(run_dir) else []
        )


def test_without_a_checkpoint_any_config_replaces_the_run(tmp_path):
    run_dir = str(tmp_path / "run")
    assert config_history.check_run_dir(TOY, run_dir) == {}  # no run directory yet
    write_run(run_dir, TOY)
    assert config_history.config_changes(run_dir, TOY) == {}
    # Nothing trained yet: every change is accepted, even of the network's shape.
    assert config_history.config_changes(run_dir, TOY.replace(embedding_dim=4, temperature=0.5)) == {
        "encoder.embedding_dim": (8, 4),
        "method.temperature": (0.1, 0.5),
    }


def test_a_run_written_at_one_step_a_call_resumes_under_the_default_unasked(tmp_path, monkeypatch):
    run_dir = str(tmp_path / "run")
    write_run(run_dir, TOY.replace(steps=40, steps_per_execution=1), monkeypatch, checkpoint_steps=(20, 40))
    auto = TOY.replace(steps_per_execution=0)
    assert config_history.config_changes(run_dir, auto.replace(steps=40)) == {}  # finished: nothing to record
    assert config_history.config_changes(run_dir, auto.replace(steps=60)) == {
        "trainer.steps": (40, 60),
        "trainer.steps_per_execution": (1, 0),
    }


def test_a_run_written_with_xla_pinned_resumes_under_auto_unasked(tmp_path, monkeypatch):
    run_dir = str(tmp_path / "run")
    write_run(run_dir, TOY.replace(steps=40, jit_compile=True), monkeypatch, checkpoint_steps=(20, 40))
    assert config_history.config_changes(run_dir, TOY.replace(steps=60, jit_compile="auto")) == {
        "trainer.steps": (40, 60),
        "trainer.jit_compile": ("true", "auto"),  # the same step; only how it is compiled changes
    }


def test_with_a_checkpoint_only_allowed_fields_change_and_steps_only_rise(tmp_path, monkeypatch):
    run_dir = str(tmp_path / "run")
    write_run(run_dir, TOY, monkeypatch, checkpoint_steps=(10, 20))
    with pytest.raises(
        ValueError,
        match="different config \\(trainer.learning_rate: 0.001 -> 0.0001\\).*"
        "checkpoint at step 20 .* add --allow_config_change=trainer.learning_rate\\.",
    ):
        config_history.config_changes(run_dir, TOY.replace(learning_rate=1e-4))
    with pytest.raises(ValueError) as error:  # a field that shapes the network: no hint to allow it
        config_history.config_changes(run_dir, TOY.replace(embedding_dim=4))
    assert "encoder.embedding_dim: 8 -> 4" in str(error.value) and "--allow_config_change=" not in str(
        error.value
    )
    assert config_history.config_changes(
        run_dir, TOY.replace(learning_rate=1e-4), ["trainer.learning_rate"]
    ) == {
        "trainer.learning_rate": (1e-3, 1e-4),
    }
    assert config_history.config_changes(run_dir, TOY.replace(steps=20)) == {
        "trainer.steps": (40, 20)
    }  # down to the checkpoint
    with pytest.raises(
        ValueError, match="--trainer.steps=19 is below the step of .* newest checkpoint \\(20\\)"
    ):
        config_history.config_changes(run_dir, TOY.replace(steps=19))


def test_allow_config_change_names_and_a_file_in_place_of_the_run(tmp_path):
    assert config_history.check_allow_changes(["trainer.learning_rate", " method.temperature ", ""]) == (
        "trainer.learning_rate",
        "method.temperature",
    )
    with pytest.raises(
        ValueError,
        match="--allow_config_change: trainer.seed, encoder.architecture, learning_rate "
        "cannot change within a run; "
        "changeable: trainer.learning_rate,",
    ):
        config_history.check_allow_changes(["trainer.seed", "encoder.architecture", "learning_rate"])
    (tmp_path / "file").write_text("")
    with pytest.raises(ValueError, match="--output_dir=.*file is an existing file, not a directory"):
        config_history.check_run_dir(TOY, str(tmp_path / "file"))


def test_config_history_appends_each_accepted_change_and_survives_damage(tmp_path):
    run_dir = str(tmp_path)
    history_path = os.path.join(run_dir, config_history.CONFIG_HISTORY_FILE)
    config_history.write_config(TOY, run_dir, {}, 0)
    assert not os.path.exists(history_path)
    config_history.write_config(TOY.replace(steps=60), run_dir, {"trainer.steps": (40, 60)}, 40)
    config_history.write_config(
        TOY.replace(steps=60, temperature=0.5), run_dir, {"method.temperature": (0.1, 0.5)}, 60
    )
    history = json.load(open(history_path))
    assert [(entry["step"], entry["changed"]) for entry in history] == [
        (40, {"trainer.steps": {"old": 40, "new": 60}}),
        (60, {"method.temperature": {"old": 0.1, "new": 0.5}}),
    ]
    assert json.load(open(os.path.join(run_dir, "config.json")))["method"]["temperature"] == 0.5
    open(history_path, "w").write("[{cut off")
    config_history.write_config(TOY.replace(steps=80), run_dir, {"trainer.steps": (60, 80)}, 60)
    assert [entry["step"] for entry in json.load(open(history_path))] == [60]  # restarted, not stopped


@pytest.mark.slow
def test_rerunning_with_another_config_is_refused(tmp_path, trained_toy_run):
    run_dir = str(tmp_path / "run")
    shutil.copytree(
        trained_toy_run.run_dir, run_dir
    )  # a finished run of toy_family.TRAINED, trained once per session
    with pytest.raises(ValueError, match="different config \\(method.temperature: 0.1 -> 0.5"):
        training.train(TRAINED.replace(temperature=0.5), run_dir, verbose=0)


def test_allow_config_change_refuses_fields_that_shape_the_network(tmp_path):
    with pytest.raises(
        ValueError, match="--allow_config_change: encoder.embedding_dim cannot change within a run"
    ):
        training.train(TOY, str(tmp_path / "run"), verbose=0, allow_changes=["encoder.embedding_dim"])


@pytest.mark.slow
def test_raising_steps_extends_a_finished_run(tmp_path):
    run_dir = str(tmp_path / "run")
    config = TOY.replace(steps=20, lr_halving_steps=20)
    training.train(config, run_dir, verbose=0)
    result = training.train(config.replace(steps=30), run_dir, verbose=0)
    assert result.final_step == 30
    assert [step for step, _ in checkpoints.list_checkpoints(run_dir)] == [20, 30]
    assert result.history["learning_rate"] == pytest.approx(
        [5e-4]
    )  # the schedule continues: halved at step 20
    history = json.load(open(os.path.join(run_dir, config_history.CONFIG_HISTORY_FILE)))
    assert history[-1]["changed"] == {"trainer.steps": {"old": 20, "new": 30}}
    with pytest.raises(
        ValueError, match="--trainer.steps=10 is below the step of .* newest checkpoint \\(30\\)"
    ):
        training.train(config.replace(steps=10), run_dir, verbose=0)
