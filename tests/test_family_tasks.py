"""abc_tf.evaluation.tasks.family_tasks: the built-in tasks; each lists its figures' file names."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

from abc_tf.evaluation.tasks.family_tasks import RETRIEVAL_FIGURE
from evaluate_helpers import evaluate_each
from folder_helpers import config_for, make_folder, write_stand_in_run


pytestmark = pytest.mark.slow


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
    assert metrics["figures"] == [RETRIEVAL_FIGURE] and set(metrics["trained"]) == {"group"}
    assert os.path.getsize(run_dir / RETRIEVAL_FIGURE) > 1000
