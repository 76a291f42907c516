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


def test_the_section_projects_each_budget_in_hours_from_the_results_alone():
    row = {
        "step_s": 0.36,
        "pipeline_s": 0.04,
        "images": 256,
        "budget": 10_000,
        "jit_compile": False,
        "mixed": True,
        "peak_mib": 2048.0,
    }
    rows = [
        {"row": name, "preset": preset, "stage": stage, **row} for name, preset, stage in full_budgets.ROWS
    ]
    rows[3].update(step_s=6.0, pipeline_s=0.0, budget=36_000)  # LORD stage 1: 60 hours
    rows[4].update(step_s=5.0, pipeline_s=0.0, budget=7_200)  # LORD stage 2: 10 hours
    results = {
        "steps": 3,
        "rounds": 2,
        "rows": rows,
        "precision": "precision line",
        "machine": "Measured on a test.",
        "load": [0.5, 1.5],
        "cpu_count": 2,
        "command": "python -m benchmarks.full_budgets --steps 3 --rounds 2",
    }
    text = full_budgets.section(results)
    assert text.startswith("Each Table S1 preset as its run trains it: median s/step of 2 rounds of 3 steps")
    assert "| ML-VAE (`pose_ml_vae`) | 0.36 | 10,000 | 1.1 |" in text
    assert text.endswith("LORD's two stages together take 70 hours (2.9 days).")
    assert (
        "`python -m benchmarks.full_budgets --steps 3 --rounds 2`, Measured on a test, load 0.5-1.5." in text
    )
