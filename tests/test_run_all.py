"""benchmarks/run_all.py: its section is written from the results file alone, goals judged from the rates."""

from __future__ import annotations

from benchmarks import run_all


def experiment(name: str, eager: float, best: float, pipeline: float) -> dict:
    """One experiment's row as a child reports it; ``best`` is the fit_mixed_spe10 rate."""
    rates = dict.fromkeys(run_all.COLUMNS, 1.0) | {"eager": eager, "fit_mixed_spe10": best}
    return {
        "experiment": name,
        "model": "s4",
        "images_per_step": 128,
        "gflop_per_step": 6.2,
        "matmul_gflops": 90.0,
        "matmul_gflops_mixed": 87.0,
        "pipeline_steps_per_s": pipeline,
        "rates": rates,
        "peak_rss_mb": 1308.0,
        "mixed_policy": "float32",
    }


def results_of(rows: list[dict]) -> dict:
    return {
        "experiments": rows,
        "steps": 10,
        "rounds": 3,
        "precision": "`--trainer.mixed_precision` on this host: float32.",
        "machine": "Measured on a test.",
        "load": [1.0, 2.0],
        "cpu_count": 2,
        "command": run_all.command_line(run_all.DEFAULT_EXPERIMENTS, 10, 3),
    }


def test_the_section_tables_each_experiment_and_judges_the_goals_from_the_rates():
    rows = [
        experiment("mnist", eager=2.0, best=8.0, pipeline=40.0),
        experiment("shapes3d", eager=1.0, best=1.5, pipeline=2.0),
        {"experiment": "pose_quick", "skipped": "failed: ['boom']"},
    ]
    text = run_all.section(results_of(rows))
    lines = text.splitlines()
    assert lines[0].startswith("Steps/s of `fit` from memory, median of 3 rounds of 10 steps")
    assert "mixed: float32." in lines[0]
    # float32: the faster of 1 and 10 steps a call; mixed: 10 steps a call; the ceiling: 90 / (2 x 6.2)
    assert "| mnist | 2.00 | 1.00 (0.5x) | 8.00 (4.0x) | 7.3x | 5.0x |" in lines
    assert "| pose_quick | skipped: failed: ['boom'] |" + " |" * 4 in lines
    assert (
        "Goal best >= 3x eager: met by mnist; missed by shapes3d. "
        "Goal pipeline >= 2x training: met by mnist; missed by shapes3d." in lines
    )
    assert "`python -m benchmarks.run_all --steps 10 --rounds 3`, Measured on a test, load 1.0-2.0." in lines
    assert "2.93" not in text


def test_the_command_names_the_experiments_only_when_they_are_not_the_default():
    assert (
        run_all.command_line("mnist", 1, 1)
        == "python -m benchmarks.run_all --experiments mnist --steps 1 --rounds 1"
    )
    assert run_all.FILE == "docs/figures/benchmarks/run_all.json"
