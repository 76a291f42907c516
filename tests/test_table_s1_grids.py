"""scripts/table_s1_grids.py: a committed grid's kept evaluations, a confirming run's included,
go back where the grid reads them, under the names they are kept by."""

from __future__ import annotations

import json
import os
import shutil

from abc_tf.evaluation import grid_search
from scripts import table_s1_grids


def test_kept_evaluations_go_back_to_their_runs_confirming_ones_included(tmp_path, monkeypatch):
    committed = os.path.join(table_s1_grids.GRIDS, "cc_vae")
    grids = tmp_path / "grids"
    (grids / "cc_vae" / "points").mkdir(parents=True)
    shutil.copyfile(os.path.join(committed, grid_search.GRID_FILE), grids / "cc_vae" / grid_search.GRID_FILE)
    point = "learning_rate=1e-3__kl_weight=3"
    for name, value in ((f"{point}.json", 4.7), (f"{point}__seed_1.json", 4.9)):
        (grids / "cc_vae" / "points" / name).write_text(json.dumps({"value": value}))
    monkeypatch.setattr(table_s1_grids, "GRIDS", str(grids))

    spec = table_s1_grids.spec_of("cc_vae", [], str(tmp_path / "out"), confirm_within=0.3)
    assert spec.confirm_within == 0.3 and spec.confirm_seeds == 1
    assert table_s1_grids.restore_points("cc_vae", spec) == [point]
    for run, value in (("", 4.7), ("seed_1", 4.9)):
        kept = tmp_path / "out" / point / run / grid_search.EVAL_DIR / spec.measure.file
        assert json.loads(kept.read_text()) == {"value": value}

    (chosen,) = [p for p in grid_search.points(spec.axes) if p.name == point]
    (own,) = grid_search.run_dirs(spec, chosen)
    (confirming,) = grid_search.confirm_dirs(spec, chosen)
    assert table_s1_grids.kept_name(spec, chosen, own) == f"{point}.json"
    assert table_s1_grids.kept_name(spec, chosen, confirming) == f"{point}__seed_1.json"
    # Both runs are measured: the point's value is their mean.
    assert grid_search.measured_runs(spec, chosen) == [own, confirming]
    assert table_s1_grids.command_line("cc_vae", spec).endswith(" --confirm_within=0.3")
