"""benchmarks/full_budgets.py: the budget each pose row is projected over (LORD's two stages
split where its preset switches) and the hours its table reports."""

from __future__ import annotations

from abc_tf.runs.experiments import get_preset
from benchmarks import full_budgets


def test_lord_s_budget_is_split_at_its_stage_switch_and_the_others_run_whole():
    lord = get_preset("pose_lord")
    first, second = full_budgets.stage_steps(lord, "stage1"), full_budgets.stage_steps(lord, "stage2")
    assert first == (0, lord.method.stage1_steps) and second[0] == lord.method.stage1_steps
    assert first[1] + second[1] == lord.trainer.steps == 75_000
    assert full_budgets.stage_steps(get_preset("pose_ml_vae"), "all") == (0, 6_250)
    assert full_budgets.stage_steps(get_preset("pose_lookup_car"), "all") == (0, 40_000)


def test_the_table_projects_each_budget_in_hours(monkeypatch):
    monkeypatch.setattr(full_budgets.report, "machine_line", lambda: "machine")
    monkeypatch.setattr(full_budgets.report, "precision_line", lambda: "precision")
    result = {
        "step_s": 0.36,
        "pipeline_s": 0.04,
        "images": 256,
        "budget": 10_000,
        "jit_compile": False,
        "mixed": True,
        "peak_mib": 2048.0,
    }
    results = {row: dict(result) for row, _, _ in full_budgets.ROWS}
    results["LORD stage 1"].update(step_s=6.0, pipeline_s=0.0, budget=36_000)  # 60 hours
    results["LORD stage 2"].update(step_s=5.0, pipeline_s=0.0, budget=7_200)  # 10 hours
    text = full_budgets.table(results, steps=3, rounds=2, load_start=0.5)
    assert "| ML-VAE | `pose_ml_vae` | 256 | no | yes | 0.36 | 0.040 | 10,000 | 1.0 | 1.1 | 2048 |" in text
    assert "LORD's two stages together: 70 hours (2.9 days)." in text
    assert "`python -m benchmarks.full_budgets --steps 3 --rounds 2`" in text
