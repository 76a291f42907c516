"""benchmarks/baselines_speed.py: the section, written from a results dict alone, with its reading
(which rows meet the >= 3x goal, where XLA is slower) computed from the rates."""

from __future__ import annotations

from benchmarks import baselines_speed

# (row, preset, images, (eager, graph, xla, mixed) steps/s, GFLOP a step, peak MiB, the preset's XLA)
ROWS = (
    ("ML-VAE, MNIST", "mnist_ml_vae_quick", 256, (19.36, 93.03, 110.42, 93.06), 1.7, 1127, True),
    ("ML-VAE, 64 x 64 pose", "pose_ml_vae_quick", 64, (5.01, 10.96, 8.00, 12.80), 20.8, 5603, False),
    ("CC-VAE, MNIST", "mnist_cc_vae_quick", 128, (6.34, 36.00, 31.49, 38.11), 3.7, 1217, True),
    ("CC-VAE, 64 x 64 pose", "pose_cc_vae_quick", 64, (2.34, 5.92, 4.04, 6.93), 45.0, 5599, False),
    ("LORD stage 1, 64 x 64 pose", "pose_lord_quick", 16, (4.24, 12.92, 0.16, 21.17), None, 5592, False),
    ("LORD stage 2, 64 x 64 pose", "pose_lord_quick", 16, (3.20, 10.09, 0.12, 14.42), None, 5600, False),
)


def _results() -> dict:
    """A results dict in the shape main() saves, with the rates of a past run."""
    rows = {}
    for row, preset, images, rates, gflop, peak, jit_compile in ROWS:
        rows[row] = {
            "preset": preset,
            "preset_jit_compile": jit_compile,
            "rates": dict(zip(baselines_speed.MODES, rates)),
            "images": images,
            "peak_mib": peak,
            "step": 0,
            "gflop": gflop,
            "matmul_gflops": 480.0,
            "mixed_policy": "mixed_bfloat16",
        }
    return {
        "steps": 5,
        "rounds": 3,
        "results": rows,
        "machine": "Measured on a test.",
        "load": [2.1, 1.1],
        "cpu_count": 2,
        "command": "python -m benchmarks.baselines_speed --steps 5 --rounds 3",
    }


def test_the_table_reads_the_rates():
    text = baselines_speed.section(_results())
    assert text.startswith("Steps/s of each quick preset from memory, median of 3 rounds of 5 steps")
    assert "mixed: mixed_bfloat16." in text
    assert "| ML-VAE, pose | 5.01 | 10.96 | 8.00 | 12.80 |" in text
    assert "| LORD stage 2, pose | 3.20 | 10.09 | 0.12 | 14.42 |" in text
    assert (
        "`python -m benchmarks.baselines_speed --steps 5 --rounds 3`, Measured on a test, load 2.1-1.1."
        in text
    )


def test_the_reading_says_which_rows_meet_the_goal():
    text = baselines_speed.reading(_results()["results"])
    assert (
        "met in float32 by 4 of 6. Not met by ML-VAE, pose (2.55x); "
        "CC-VAE, pose (2.96x)."  # 6.93 / 2.34 in mixed precision
    ) in text
    assert "LORD's XLA rows run 81-84x slower" in text


def test_the_goal_can_fail_in_float32():
    results = _results()
    for result in results["results"].values():
        result["rates"] = {"eager": 10.0, "graph": 20.0, "xla": 25.0, "mixed": 30.0}
    results["results"]["ML-VAE, MNIST"]["rates"]["mixed"] = 29.9
    text = baselines_speed.reading(results["results"])
    assert "met in float32 by 0 of 6. Met only in mixed_bfloat16 by ML-VAE, pose; CC-VAE," in text
    assert "Not met by ML-VAE, MNIST (2.99x)." in text
    assert "LORD's XLA rows" not in text
