"""benchmarks/default_speed.py on a few steps: every loop is timed, and its table ties each figure
to its row of the JSON file."""

from __future__ import annotations

import pytest

from benchmarks import default_speed


@pytest.mark.slow
def test_every_loop_is_timed_and_the_table_links_its_figures():
    results = default_speed.measure(steps=10, rounds=1)
    assert [row["loop"] for row in results["rows"]] == list(default_speed.LABELS)
    assert results["auto_steps_per_execution"] == 10 and all(
        row["steps_per_s"] > 0 for row in results["rows"]
    )
    assert results["rows"][1]["over_bare"] == pytest.approx(1.0)
    results.update(machine="Measured on a test.", load=[0.0, 0.0], cpu_count=2, command="the command")
    text = default_speed.section(results)
    assert "auto: 10 steps a call" in text and f"]({default_speed.FILE}#/rows/3/over_eager)" in text
