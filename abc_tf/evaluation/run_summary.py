"""What a finished run isolated: one row per known factor, printed by ``train.py`` at the end
of a run and written into the run directory (``isolation_summary.json`` and ``.png``).

The numbers are the last measurement of :class:`abc_tf.evaluation.callbacks.FactorIsolationCallback`
(cheap probes and a short MINE on the run's labelled sample, abc_tf.evaluation.tasks.labelled_samples:
known factors, the labels of grouped images or pose bins; noise at the loss's length scale),
or the same measures made at the end (:func:`summary_from_data`); ``evaluate.py`` measures
them with the paper's long MINE. A measurement that takes more than a few seconds (a large
sample, a slow host) says how far it is every ``callbacks.SUMMARY_PROGRESS_EVERY`` seconds
(abc_tf.evaluation.progress); a quick one prints nothing. A factor counts as kept
when its mutual information at the length scale is clearly above zero, as dropped when it is
near zero: the training is meant to drop the inactive factors (docs/PAPERS.md section 4).
"""

from __future__ import annotations

import os
from typing import Sequence

import numpy as np

from abc_tf import json_files
from abc_tf.evaluation.callbacks import (
    CHEAP_MINE,
    CHEAP_PROBES,
    SUMMARY_PROGRESS_EVERY,
    SUMMARY_PROGRESS_PREFIX,
)
from abc_tf.evaluation.tasks import factor_isolation
from abc_tf.evaluation.estimators import mine, plots, probes
from abc_tf.evaluation import progress, tasks
from abc_tf.runs.run_dir import embed

SUMMARY_JSON = "isolation_summary.json"
SUMMARY_PNG = "isolation_summary.png"
# MI in nats at the length scale. MINE reads 0.00-0.06 for the factors a run dropped
# (RESULTS.md, Shapes3D, every seed and condition), so 0.1 and more is information kept;
# in between is "weak".
KEPT_NATS = 0.10
DROPPED_NATS = 0.07
# Without MI: the probe's accuracy above chance, as a fraction of the way from chance to 1.
KEPT_PROBE = 0.15
DROPPED_PROBE = 0.05


def verdict(mutual_information: float | None, accuracy: float | None, chance: float) -> str:
    """kept, weak or dropped, from the MI when measured, else from the probe accuracy."""
    if mutual_information is not None:
        value, kept, dropped = mutual_information, KEPT_NATS, DROPPED_NATS
    elif accuracy is not None:
        value, kept, dropped = (accuracy - chance) / max(1.0 - chance, 1e-9), KEPT_PROBE, DROPPED_PROBE
    else:
        return "?"
    return "kept" if value >= kept else "dropped" if value < dropped else "weak"


def factor_summary(
    record: dict,
    names: Sequence[str],
    inactive: Sequence[str],
    num_classes: Sequence[int],
    sigma: float,
    num_images: int,
    noise_rule: str = "length scale",
) -> dict:
    """The summary of one measurement ``record`` (FactorIsolationCallback.history entry);
    ``noise_rule``: which sigma applied (``factor_isolation.noise_sigma``)."""
    mutual_information = record.get("mine") or record.get("histogram") or {}
    accuracy = record.get("probe_accuracy", {})
    rows = []
    for name, classes in zip(names, num_classes):
        chance = 1.0 / classes
        mi = mutual_information.get(name)
        acc = accuracy.get(name)
        rows.append(
            {
                "factor": name,
                "trained_as": "inactive" if name in inactive else "active",
                "mutual_information_nats": None if mi is None else float(mi),
                "probe_accuracy": None if acc is None else float(acc),
                "chance": chance,
                "verdict": verdict(mi, acc, chance),
            }
        )
    return {
        "step": int(record["step"]),
        "sigma": float(sigma),
        "noise_rule": noise_rule,
        "num_images": int(num_images),
        "mi_estimator": "mine" if record.get("mine") else "histogram" if record.get("histogram") else None,
        "factors": rows,
    }


def format_table(summary: dict) -> str:
    """The summary as an aligned text table with a heading line."""

    def number(value, digits):
        # MINE's bound dips just below 0 when there is nothing to find; information is >= 0.
        return "-" if value is None else f"{max(value, 0.0):.{digits}f}"

    rule = summary.get("noise_rule", "length scale")
    meaning = "the loss's length scale" if rule == "length scale" else f"{rule} of the embeddings"
    lines = [
        f"What the run isolated at step {summary['step']} (noise sigma {summary['sigma']:g} = {meaning}; "
        f"{summary['num_images']} labelled images):",
        f"  {'factor':14s} {'trained as':10s} {'MI (nats)':>9s} {'probe acc':>9s} {'chance':>6s}  result",
    ]
    for row in summary["factors"]:
        lines.append(
            f"  {row['factor']:14s} {row['trained_as']:10s} {number(row['mutual_information_nats'], 2):>9s} "
            f"{number(row['probe_accuracy'], 2):>9s} {row['chance']:6.2f}  {row['verdict']}"
        )
    return "\n".join(lines)


def write(run_dir: str, summary: dict) -> tuple[str, str]:
    """Writes the JSON and the figure (MI and probe accuracy per factor) into ``run_dir``."""
    json_path = os.path.join(run_dir, SUMMARY_JSON)
    json_files.write_json(json_path, summary)
    png_path = os.path.join(run_dir, SUMMARY_PNG)
    plots.plot_factor_summary(
        summary["factors"],
        png_path,
        title=f"step {summary['step']}, noise sigma {summary['sigma']:g} (inactive factors shaded)",
    )
    return json_path, png_path


def _measure(
    embeddings: np.ndarray,
    factors: np.ndarray,
    names: Sequence[str],
    num_classes: Sequence[int],
    sigma: float,
    seed: int,
) -> dict:
    """Cheap probes and MINE per factor, as FactorIsolationCallback measures them."""
    accuracy = probes.probe_accuracies(
        embeddings, factors, sigma, list(names), list(num_classes), CHEAP_PROBES, seed
    )
    information = np.atleast_1d(mine.mine_mutual_information(embeddings, factors, sigma, CHEAP_MINE, seed))
    return {
        "probe_accuracy": dict(zip(names, accuracy.accuracy.tolist())),
        "mine": dict(zip(names, information.tolist())),
    }


def summary_from_data(config, encoder, step: int, num_images: int = 512, seed: int = 0) -> dict | None:
    """The summary for a run without a factor-isolation measurement: cheap probes and MINE on
    the run's labelled sample (abc_tf.evaluation.tasks.labelled_samples, as the family's task draws
    it: known factors, the labels of grouped images, pose bins); None where there is none."""
    sample = tasks.labelled_sample(config, num_images, seed)
    if sample is None:
        return None
    embeddings = embed(encoder, sample.images)
    sigma, rule = factor_isolation.noise_sigma(config, embeddings)
    unit = factor_isolation.measuring_unit(rule, embeddings)
    with progress.reporting(SUMMARY_PROGRESS_EVERY, SUMMARY_PROGRESS_PREFIX):
        measured = _measure(embeddings / unit, sample.factors, sample.names, sample.sizes, sigma / unit, seed)
    record = {"step": step, **measured}
    return factor_summary(
        record, sample.names, sample.inactive, sample.sizes, sigma, len(sample.images), rule
    )
