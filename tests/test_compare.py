"""compare.py (abc_tf compare): the rows side by side into --output_dir, and one clear line (exit 2,
no traceback) for a bad flag or row. The command line runs in the test process
(``compare.command``); the comparison itself: tests/test_comparison.py."""

from __future__ import annotations

import json
import os

import pytest

from abc_tf.cli import compare
from abc_tf.runs import experiments
from process_helpers import assert_one_clear_error, modules_loaded_by

BASE = experiments.config_for(embedding_dim=4, set_size=8, steps=2, log_every=1, inactive_factors="wall_hue")


def run_compare(capsys, *flags) -> tuple[int, str, str]:
    """``compare.py flags...`` in this process: (exit status, stdout, stderr)."""
    code = compare.command(["compare.py", *(str(flag) for flag in flags)])
    output = capsys.readouterr()
    return code, output.out, output.err


@pytest.mark.parametrize(
    "flags,message",
    [
        (["--output_dir={out}"], "Pass --runs=DIR,DIR,..."),
        (["--runs={missing}"], "Pass --output_dir (where comparison.md, .json and .png go)."),
        (["--runs={missing}", "--output_dir={out}"], "is not a directory"),
        (["--runs={missing}", "--output_dir={out}", "--disentanglement_scores=irs"], "unknown or no scores"),
        (["--runs={missing}", "--output_dir={out}", "--mine_steps=-1"], "--mine_steps must be >= 0"),
        # One run's flags: a row names its network as DIR@NETWORK; the noise follows each row's method.
        (
            ["--runs={missing}", "--output_dir={out}", "--network=appearance"],
            "Unknown command line flag 'network'",
        ),
        (["--runs={missing}", "--output_dir={out}", "--sigma=0.1"], "Unknown command line flag 'sigma'"),
        (["--compare={missing}", "--output_dir={out}"], "Unknown command line flag 'compare'"),
    ],
    ids=[
        "no runs",
        "no output_dir",
        "missing run",
        "unknown score",
        "negative mine_steps",
        "network",
        "sigma",
        "compare",
    ],
)
def test_bad_flags_fail_with_one_line(flags, message, tmp_path, capsys):
    values = {"out": tmp_path / "out", "missing": tmp_path / "missing"}
    code, _, stderr = run_compare(capsys, *(flag.format(**values) for flag in flags))
    assert_one_clear_error(code, stderr, message)
    assert not (tmp_path / "out" / "comparison.json").exists()


def test_help_answers_without_loading_tensorflow():
    code, output, modules = modules_loaded_by("compare.py", "--help")
    assert code == 0 and "--runs: The rows, separated by commas" in output, output[-3000:]
    assert "--untrained" in output and "--mine_steps" in output and "--pose_repeats" not in output
    assert not {"tensorflow", "keras"} & modules


@pytest.mark.slow
def test_a_folder_of_seeds_is_compared_with_the_untrained_row(tmp_path, capsys):
    from abc_tf.runs import training

    for seed in (0, 1):
        run_dir = tmp_path / "abc_seeds" / f"seed_{seed}"
        os.makedirs(run_dir)
        (run_dir / "config.json").write_text(BASE.replace(seed=seed).to_json())
        training.untrained_encoder(BASE.replace(seed=seed)).save(str(run_dir / "encoder.keras"))
    out = tmp_path / "out"
    code, stdout, stderr = run_compare(
        capsys,
        f"--runs={tmp_path / 'abc_seeds'}",
        "--untrained",
        f"--output_dir={out}",
        "--num_images=48",
        "--mine_steps=0",
        "--probe_epochs=1",
        "--disentanglement=none",
    )
    assert code == 0, stderr[-2000:]
    written = json.loads((out / "comparison.json").read_text())
    assert [row["label"] for row in written["rows"]] == ["abc_seeds", "untrained"]
    assert written["disentanglement_preset"] == "none" and "disentanglement" not in written["rows"][0]
    assert "Disentanglement scores were not computed" in (out / "comparison.md").read_text()
    assert (out / "comparison.png").exists() and "## Probe test accuracy per factor" in stdout
    assert not (out / "logs").exists()  # no TensorBoard logs
