"""benchmarks/sweep_speed.py: the section's table of wall times and ratios, and its estimate
marked as one."""

from __future__ import annotations

from benchmarks import sweep_speed


def test_the_section_gives_the_ratios_the_load_the_command_and_an_estimate_marked_as_such():
    seconds = {"one after another": 400.0, "side by side": 250.0}
    results = {
        "experiment": "mnist_vae_quick",
        "steps": 200,
        "sweeps": {
            "grid of 4 points": {
                "runs": 4,
                "seconds": seconds,
                "picks": {"one after another": "a", "side by side": "a"},
            },
            "train.py --seeds=3": {"runs": 3, "seconds": {"one after another": 300.0, "side by side": 200.0}},
        },
        "cpu_count": 2,
        "load": [3.0, 3.5],
        "machine": "Measured 2026-12-07 on a CPU, 2 CPU cores, devices: CPU; TensorFlow 2.21.0.",
        "command": "python -m benchmarks.sweep_speed",
    }
    text = sweep_speed.section(results)
    assert "| grid of 4 points | 4 | 400 | 250 | 1.60x |" in text
    assert "| train.py --seeds=3 | 3 | 300 | 200 | 1.50x |" in text
    # 250 s for 4 runs, 2 at once: 125 s a run; 58 points on 1 host, 2 at once: 29 rounds.
    assert "The grid's picks: one after another `a`, side by side `a`." in text
    assert "**Estimate, not measured:**" in text and "1 host(s) 60 min" in text
    assert "load 3.0-3.5" in text and "`python -m benchmarks.sweep_speed`" in text
