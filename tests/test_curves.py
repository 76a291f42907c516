"""curves.py (abc_tf curves): a bad flag or run directory stops with one clear line (exit 2, no
traceback) before any checkpoint is evaluated; a tiny run's checkpoints become curve.json and
curve.png. The command line runs in the test process (``curves.command``); the curve's measures
themselves: tests/test_learning_curves.py."""

from __future__ import annotations

import json

import pytest

from abc_tf.cli import curves
from abc_tf.runs import experiments
from process_helpers import assert_one_clear_error, modules_loaded_by

CASES = {
    "no run": ([], "Pass --run_dir (a train.py run directory)."),
    "no checkpoints flag": (["--run_dir={run}"], "Pass --checkpoints: all, last, or steps"),
    "missing run_dir": (["--run_dir={missing}", "--checkpoints=all"], "is not a directory"),
    "empty output_dir": (
        ["--run_dir={run}", "--checkpoints=all", "--output_dir="],
        "--output_dir is empty (an unset shell variable?)",
    ),
    "seeds": (
        ["--run_dir={seeds}", "--checkpoints=all"],
        "holds seed_<k> runs; a curve is of one run: pass one seed_<k> folder.",
    ),
    "no checkpoint kept": (
        ["--run_dir={run}", "--checkpoints=all"],
        "{run} keeps no checkpoint (train.py writes them every --trainer.log_every steps)",
    ),
    "curve reference": (
        ["--run_dir={run}", "--checkpoints=all", "--curve_reference=ENT"],
        "--curve_reference='ENT': write MEASURE=VALUE",
    ),
    "negative mine_steps": (
        ["--run_dir={run}", "--checkpoints=all", "--mine_steps=-5"],
        "--mine_steps must be >= 0 (0: skip), got -5",
    ),
    "evaluate's flag": (
        ["--run_dir={run}", "--checkpoints=all", "--seeds=2"],
        "Unknown command line flag 'seeds'",
    ),
}


@pytest.mark.parametrize("name", list(CASES))
def test_bad_flags_and_run_directories_fail_with_one_line(name, tmp_path, capsys):
    flags, message = CASES[name]
    run = tmp_path / "run"
    run.mkdir()
    (run / "config.json").write_text("{}")
    (tmp_path / "seeds" / "seed_0").mkdir(parents=True)
    (tmp_path / "seeds" / "seed_0" / "config.json").write_text("{}")
    values = {"run": run, "missing": tmp_path / "missing", "seeds": tmp_path / "seeds"}
    code = curves.command(["curves.py", *(flag.format(**values) for flag in flags)])
    assert_one_clear_error(code, capsys.readouterr().err, message.format(**values))
    assert not (run / "curve.json").exists()


def test_help_answers_without_loading_tensorflow():
    code, output, modules = modules_loaded_by("curves.py", "--help")
    assert code == 0 and "--checkpoints: The checkpoints to evaluate" in output, output[-3000:]
    assert "--curve_reference" in output and "--pose_repeats" in output and "--untrained" not in output
    assert not {"tensorflow", "keras"} & modules


@pytest.mark.slow
def test_a_run_s_checkpoints_become_its_learning_curve(tmp_path, capsys):
    from abc_tf.runs import training

    config = experiments.config_for(embedding_dim=4, set_size=8, pairs_per_step=1, steps=4, log_every=2)
    run_dir = tmp_path / "run"
    training.train(config, str(run_dir), verbose=0)
    out = tmp_path / "curve"
    code = curves.command(
        [
            "curves.py",
            f"--run_dir={run_dir}",
            "--checkpoints=all",
            f"--output_dir={out}",
            "--num_images=48",
            "--mine_steps=0",
            "--probe_epochs=1",
            "--disentanglement=none",
        ]
    )
    assert code == 0, capsys.readouterr().err[-3000:]
    curve = json.loads((out / "curve.json").read_text())
    assert curve["steps"] == [2, 4] and len(curve["measures"]["probe shape"]) == 2
    assert (out / "curve.png").is_file() and (out / "checkpoints" / "step_2" / "metrics.json").is_file()
    assert not (out / "logs").exists()  # no TensorBoard logs
