"""benchmarks/evaluation_cost.py: its section of BENCHMARKS.md, written from a results dict alone."""

from __future__ import annotations

from benchmarks import evaluation_cost

SAMPLES = (16_384, 65_536, 262_144)
# MINE at D = (8, 64, 256) for each N: wall and CPU s per 1000 steps, the rest of an estimate.
MINE = {
    16_384: ((2.00, 3.77, 0.06), (3.00, 5.00, 0.08), (4.00, 7.03, 0.12)),
    65_536: ((1.99, 3.76, 0.19), (3.10, 5.20, 0.25), (4.52, 8.04, 0.40)),
    262_144: ((2.34, 4.35, 0.65), (3.20, 5.10, 1.00), (3.70, 6.58, 1.60)),
}
# Probes at D = (8, 64, 256): wall and CPU s per epoch.
PROBES = {
    16_384: ((0.04, 0.05), (0.05, 0.07), (0.07, 0.10)),
    65_536: ((0.12, 0.17), (0.20, 0.30), (0.28, 0.41)),
    262_144: ((0.48, 0.70), (0.70, 1.00), (0.98, 1.55)),
}
HISTOGRAM = {
    16_384: (0.002, 0.002, 0.002),
    65_536: (0.007, 0.008, 0.007),
    262_144: (0.028, 0.030, 0.029),
    1_048_576: (0.145, 0.126, 0.120),
}


def _results() -> dict:
    mine_rows = [
        {
            "n": n,
            "d": d,
            "per_1k": wall,
            "per_1k_cpu": cpu,
            "rest": rest,
            "setup": 2.0,
            "paper": 20 * wall + rest * 256_000 / n,
            "paper_cpu": 20 * cpu + rest * 256_000 / n,
        }
        for n in SAMPLES
        for d, (wall, cpu, rest) in zip((8, 64, 256), MINE[n])
    ]
    probe_rows = [
        {
            "n": n,
            "d": d,
            "epochs": max(5, round(5 * 262_144 / n)),
            "per_epoch": wall,
            "per_epoch_cpu": cpu,
            "fixed": 0.1,
            "tracing": 1.3,
            "full": 1.4 + 30 * wall,
            "full_cpu": 1.6 + 30 * cpu,
        }
        for n in SAMPLES
        for d, (wall, cpu) in zip((8, 64, 256), PROBES[n])
    ]
    histogram_rows = [
        {"n": n, "d": d, "seconds": s} for n, row in HISTOGRAM.items() for d, s in zip((1, 2, 3), row)
    ]
    return {
        "mine_steps": 300,
        "mine": mine_rows,
        "probes": probe_rows,
        "histogram": histogram_rows,
        "total_seconds": 144.0,
        "factor_sizes": [10, 10, 10, 8, 4, 15],
        "sigma": 0.1,
        "first_steps": 50,
        "repeats": 3,
        "mine_batch": 256,
        "paper_steps": 20_000,
        "paper_eval_samples": 256_000,
        "num_sigmas": 40,
        "probe_batch": 256,
        "probe_epochs": 30,
        "probe_test_fraction": 0.2,
        "probe_samples": 5 * 262_144,
        "machine": "Measured on a test.",
        "load": [0.8, 1.6],
        "cpu_count": 2,
        "command": "python -m benchmarks.evaluation_cost --mine_steps 300",
    }


def test_the_section_writes_the_tables_the_reading_and_the_command_from_the_results():
    text = evaluation_cost.section(_results())
    lines = text.splitlines()
    assert lines[0].startswith(
        "Wall time on random [N, D] embeddings: one MINE estimate at the paper's 20,000"
    )
    # The table shows the smallest and largest N and D only.
    assert "| 262,144 | 256 | 1.3 | 0.8 | 31 |" in lines
    assert not any(line.startswith("| 65,536 |") or line.startswith("| 16,384 | 64 |") for line in lines)
    assert "| 16,384 | 8 | 0.7 | 0.5 | 3 |" in lines
    assert "No cost grows faster than N log N." in text
    assert (
        "`python -m benchmarks.evaluation_cost --mine_steps 300`, Measured on a test, load 0.8-1.6." in lines
    )


def test_a_cost_per_sample_that_grows_is_called_super_linear():
    results = _results()
    for row in results["probes"]:
        row["per_epoch_cpu"] *= (row["n"] / SAMPLES[0]) ** 0.5  # N^1.5 in all
    text = evaluation_cost.section(results)
    assert "A probe epoch grows faster than linearly." in text
    assert evaluation_cost.FILE == "docs/figures/benchmarks/evaluation_cost.json"
