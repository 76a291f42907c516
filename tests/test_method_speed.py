"""benchmarks/method_speed.py: one method's row measured on a few steps, and the table that ties
each figure to its place in the JSON file."""

from __future__ import annotations

import pytest

from abc_tf.runs import experiments
from benchmarks import method_speed


@pytest.mark.slow
def test_a_method_row_counts_its_step_and_times_it_against_the_matmul_rate():
    preset = experiments.quick_presets()["ml_vae"]
    row = method_speed.measure_method("ml_vae", preset, steps=10, rounds=1)
    assert row["preset"] == preset.name and row["steps_per_execution"] >= 1
    assert row["gflop_per_step"] > 0 and row["steps_per_s"] > 0 and row["matmul_gflops_before"] > 0
    assert row["of_matmul"] == pytest.approx(
        row["gflop_per_step"]
        * row["steps_per_s"]
        / ((row["matmul_gflops_before"] + row["matmul_gflops_after"]) / 2)
    )


def test_the_table_links_every_figure_and_marks_a_step_without_a_count():
    counted = {
        "method": "abc",
        "preset": "shapes3d_demo",
        "batch_format": "sets",
        "policy": "float32",
        "jit_compile": False,
        "steps_per_execution": 10,
        "gflop_per_step": 61.5,
        "steps_per_s": 0.5,
        "gflops": 30.8,
        "of_matmul": 0.8,
    }
    uncounted = {**counted, "method": "lord", "jit_compile": True, "gflop_per_step": None}
    results = {"rows": [counted, uncounted], "steps": 10, "rounds": 3, "machine": "Measured on a test."}
    text = method_speed.section(results)
    assert "`python -m benchmarks.method_speed --steps=10 --rounds=3`, Measured on a test." in text
    rows = [line for line in text.splitlines() if line.startswith("| abc") or line.startswith("| lord")]
    assert f"[0.80]({method_speed.FILE}#/rows/0/of_matmul)" in rows[0]
    assert rows[1].startswith(f"| lord, XLA | [0.50]({method_speed.FILE}#/rows/1/steps_per_s)")
    assert rows[1].endswith("| - |")
