"""benchmarks/curation.py: its section is written from the results file alone, the goal and the
pipeline's sentence judged from the measured ratios."""

from __future__ import annotations

from benchmarks import curation


def results_of(ratio_images: float, pipeline_over_training: float) -> dict:
    """Results in the shape main() builds, one row."""
    row = {
        "inactive": "wall hue (the main job)",
        "ours_images": 246.0,
        "scan_images": 246.0 / ratio_images,
        "ratio_images": ratio_images,
        "ours_ids": 87426.0,
        "scan_labels": 0.31,
        "ratio_ids": 87426.0 / 0.31,
    }
    return {
        "set_size": 32,
        "scan_block": 256,
        "scan_sets": 4,
        "goal": curation.GOAL,
        "table_seconds": 2.2,
        "rows": [row],
        "render_images_per_s": 18061.0,
        "pipeline_images_per_s": 60.0 * pipeline_over_training,
        "training_images_per_s": 60.0,
        "pipeline_over_training": pipeline_over_training,
        "machine": "Measured on a test.",
        "load": [4.6, 5.0],
        "cpu_count": 2,
        "command": "python -m benchmarks.curation",
    }


def test_the_section_tables_the_rates_and_judges_the_goal_from_them():
    text = curation.section(results_of(ratio_images=1632.0, pipeline_over_training=141.0))
    lines = text.splitlines()
    assert lines[0].endswith("Goal: at least 1,000x.")
    assert "| wall hue (the main job) | 246 | 1,632x | 87,426 | 282,019x |" in lines
    assert "The goal holds in every row. The pipeline delivers 141x what S3 training consumes." in lines
    assert "`python -m benchmarks.curation`, Measured on a test, load 4.6-5.0." in lines


def test_a_missed_goal_and_a_slow_pipeline_are_said_so():
    text = curation.section(results_of(ratio_images=500.0, pipeline_over_training=0.5))
    assert "The goal does not hold in every row. The pipeline delivers 0.5x what S3 training" in text
    assert curation.FILE == "docs/figures/benchmarks/curation.json"
