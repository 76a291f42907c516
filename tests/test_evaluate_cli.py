"""evaluate.py: a bad flag stops with one clear line (exit 2) before any run is evaluated."""

import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.mark.parametrize(
    "flags,message",
    [
        ([], "Pass --run_dir (a train.py run directory) or --saved_model"),
        (["--run_dir={missing}"], "is not a directory"),
        (["--saved_model={missing}"], "is not a SavedModel folder (no saved_model.pb)"),
        (["--run_dir={run}", "--seeds=-1"], "--seeds must be >= 0, got -1"),
        (["--run_dir={run}", "--num_images=5"], "num_images must be at least 10, got 5"),
        (["--run_dir={run}", "--mine_batch_size=0"], "MINE batch_size must be a positive integer, got 0"),
        (["--run_dir={run}", "--probe_epochs=5", "--num_sigmas=1"], "num_sigmas must be 0 (no sweep) or at least 2"),
        (["--run_dir={run}", "--pose_repeats=0"], "Pose evaluation repeats must be positive, got 0"),
        (["--run_dir={run}", "--pose_query_domains=real,imaginary"], "query_domains must name 'real' and/or 'synthetic'"),
        (["--run_dir={run}", "--pose_dictionary_size=100", "--pose_pool_size=50"], "pool_size (50) must be at least dictionary_size (100)"),
    ],
)
def test_bad_flags_fail_with_a_clear_message(tmp_path, flags, message):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "config.json").write_text("{}")  # never read: the flags are refused first
    arguments = [flag.format(run=run_dir, missing=tmp_path / "missing") for flag in flags]
    result = subprocess.run(
        [sys.executable, os.path.join(ROOT, "evaluate.py"), *arguments],
        capture_output=True, text=True, cwd=tmp_path, env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"},
    )
    assert result.returncode == 2, result.stderr[-2000:]
    assert message in result.stderr
    assert "Traceback" not in result.stderr
    assert not (run_dir / "metrics.json").exists()
