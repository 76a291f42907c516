"""The runs of several seeds evaluated one by one and summarised into one metrics.json.

Factor isolation summarises per factor with violin plots; other tasks' numbers become
{mean, std, values} at their own paths (:func:`aggregate_numbers`).
"""

from __future__ import annotations

import os

from abc_tf import json_files
from abc_tf.evaluation import progress
from abc_tf.evaluation.estimators import plots
from abc_tf.evaluation.tasks import encoder_disentanglement, factor_isolation
from abc_tf.evaluation.tasks.evaluation_settings import EvaluationSettings
from abc_tf.evaluation.tasks.run_evaluation import METRICS_FILE, evaluate_run
from abc_tf.runs.run_dir import TrainedRun


def evaluate_seeds(
    runs: list[TrainedRun], out_dirs: list[str], out_dir: str, settings: EvaluationSettings
) -> dict:
    """Evaluates each seed's run into its folder of ``out_dirs`` and aggregates into ``out_dir/metrics.json``.

    Factor isolation aggregates with its per-factor summary and violin plots (factor_isolation.aggregate).
    Other tasks store every number as {mean, std, values} at its own path (:func:`aggregate_numbers`).
    """
    results = []
    for index, (run, seed_out) in enumerate(zip(runs, out_dirs), 1):
        print(f"Seed {index}/{len(runs)}: {run.run_dir} -> {seed_out}")
        results.append(evaluate_run(run, seed_out, settings))
    run_dirs = [run.run_dir for run in runs]
    if not all("condition" in result for result in results):
        summary = {**aggregate_numbers(results), "num_runs": len(runs), "runs": run_dirs}
        json_files.write_json(os.path.join(out_dir, METRICS_FILE), summary, sort_keys=True)
        progress.wrote(os.path.join(out_dir, METRICS_FILE))
        return summary
    summary = factor_isolation.aggregate(results)
    first = results[0]
    summary.update(
        condition=first["condition"], inactive=first["inactive"], runs=run_dirs, sigma=first["sigma"]
    )
    for key, label in (
        ("mine", "I(U; G) [nats]"),
        ("histogram", "I(U; G) [nats]"),
        ("probe_accuracy", "test accuracy"),
    ):
        if key in summary:
            names, table = factor_isolation.seed_table(summary, key)
            chance = [summary["chance"][n] for n in names] if key == "probe_accuracy" else None
            plots.plot_factor_distribution(
                table,
                names,
                first["inactive"],
                os.path.join(out_dir, f"seeds_{key}.png"),
                label,
                title=f"{summary['condition']} ({len(runs)} seeds)",
                chance=chance,
            )
    if all("untrained" in result for result in results):
        summary["untrained"] = factor_isolation.aggregate([result["untrained"] for result in results])
    if "disentanglement" in summary:
        series = {
            label: {key: value["values"] for key, value in part["disentanglement"].items()}
            for label, part in (("trained", summary), ("untrained", summary.get("untrained", {})))
            if "disentanglement" in part
        }
        encoder_disentanglement.plot_scores(
            series,
            os.path.join(out_dir, "seeds_disentanglement.png"),
            f"{summary['condition']} ({len(runs)} seeds)",
        )
    json_files.write_json(os.path.join(out_dir, METRICS_FILE), summary, sort_keys=True)
    progress.wrote(os.path.join(out_dir, METRICS_FILE))
    return summary


def aggregate_numbers(results: list[dict]) -> dict:
    """The runs' metrics merged key by key.

    A number every run has becomes {mean, std, values}. A dict every run has is merged the same way.
    A text all runs share is kept. Lists and differing texts stay in the per-run files.
    """
    merged: dict = {}
    for key, first in results[0].items():
        values = [result.get(key) for result in results]
        if isinstance(first, dict) and all(isinstance(value, dict) for value in values):
            merged[key] = aggregate_numbers(values)
        elif all(isinstance(value, (int, float)) and not isinstance(value, bool) for value in values):
            merged[key] = factor_isolation.mean_std_values(values)
        elif isinstance(first, str) and all(value == first for value in values):
            merged[key] = first
    return merged
