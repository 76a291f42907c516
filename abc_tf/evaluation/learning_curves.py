"""Learning curves: the measures of a run's checkpoints against its training step
(``curves.py --run_dir=DIR --checkpoints=all``).

Each checkpoint is evaluated like a finished run (its family's evaluator, its method's own
measures) into ``<output_dir>/checkpoints/step_<S>/``; :func:`curve_measures` keeps the numbers
a curve shows, and :func:`write_curve` writes them for every step into ``curve.json`` and
``curve.png``, a panel per measure, with the paper's value as a dashed line where one is given.
"""

from __future__ import annotations

import math
import os
from typing import Mapping, Sequence

import numpy as np

from abc_tf import json_files
from abc_tf.evaluation import progress
from abc_tf.evaluation.estimators import plots

CURVE_JSON = "curve.json"
CURVE_FIGURE = "curve.png"


def curve_measures(metrics: dict) -> dict[str, float]:
    """The scalar measures of one evaluation (``metrics.json`` of one run) that a learning curve
    shows: the method's headline measures (a GAN's code NMI, a VAE's test ELBO), the
    disentanglement scores, probe accuracy per factor, and the digit-cluster measures of the
    representation (1-NN accuracy, k-means NMI; a VAE's kNN accuracy per latent space), and a
    digit-style evaluation's retrieval-row style spread and within-digit style R^2 on the
    held-out digit (Fig. 4 / S7 over training)."""
    measures: dict[str, float] = {}
    measures.update((metrics.get("method") or {}).get("headline") or {})
    representation = (
        (metrics.get("method") or {}).get("representation") or metrics.get("digit_clusters") or {}
    )
    for key, label in (
        ("nearest_neighbour_accuracy", "1-NN digit accuracy"),
        ("kmeans_nmi", "k-means NMI digit"),
    ):
        if key in representation:
            measures[label] = representation[key]
    for space, knn in ((metrics.get("method") or {}).get("knn_accuracy") or {}).items():
        if isinstance(knn, dict) and "all" in knn:
            measures[f"kNN digit accuracy ({space})"] = knn["all"]
    digit_style = metrics.get("trained") or {}
    for factor, spread in (digit_style.get("retrieval_row_style_spread") or {}).items():
        measures[f"retrieval row spread {factor}"] = spread
    for factor, fits in (digit_style.get("style_r2") or {}).items():
        if "ridge_within_digit_holdout_digit" in fits:
            measures[f"style R2 {factor} (held-out digit)"] = fits["ridge_within_digit_holdout_digit"]
    scores = (metrics.get("disentanglement") or {}).get("scores") or {}
    measures.update(scores)
    for factor, probe in (metrics.get("probe") or {}).items():
        if isinstance(probe, dict) and "accuracy" in probe:
            measures[f"probe {factor}"] = probe["accuracy"]
    return {
        name: float(value)
        for name, value in measures.items()
        if isinstance(value, (int, float)) and math.isfinite(value)
    }


def write_curve(
    points: Sequence[tuple[int, dict[str, float]]],
    out_dir: str,
    title: str,
    references: Mapping[str, float] | None = None,
) -> dict:
    """Writes ``curve.json`` ({"steps", "measures": {name: [value per step]}, "references"}) and
    ``curve.png`` under ``out_dir``; returns the JSON's content. A measure missing at a step
    is NaN there (null in the JSON)."""
    steps = [step for step, _ in points]
    names = sorted({name for _, measures in points for name in measures})
    table = {name: [measures.get(name, float("nan")) for _, measures in points] for name in names}
    references = dict(references or {})
    unknown = sorted(set(references) - set(names))
    if unknown:
        raise ValueError(
            f"--curve_reference names {', '.join(unknown)}, which the evaluation does not measure "
            f"(measured: {', '.join(names)})."
        )
    curve = {
        "steps": steps,
        "measures": {name: [None if math.isnan(v) else v for v in values] for name, values in table.items()},
        "references": references,
    }
    os.makedirs(out_dir, exist_ok=True)
    json_files.write_json(os.path.join(out_dir, CURVE_JSON), curve, sort_keys=True)
    progress.wrote(os.path.join(out_dir, CURVE_JSON))
    plot_curve(steps, table, os.path.join(out_dir, CURVE_FIGURE), title, references)
    return curve


def plot_curve(
    steps: Sequence[int],
    table: Mapping[str, Sequence[float]],
    path: str,
    title: str,
    references: Mapping[str, float] | None = None,
):
    """A panel per measure: its value at each checkpoint against the step; a paper's value as a
    dashed horizontal line."""
    names = list(table)
    if not names:
        raise ValueError("No measure to plot: the evaluation of the checkpoints returned no scalar measure.")
    columns = min(4, len(names))
    rows = math.ceil(len(names) / columns)
    figure = plots.new_figure(3.2 * columns, 2.4 * rows + 0.4)
    for index, name in enumerate(names):
        axis = figure.add_subplot(rows, columns, index + 1)
        axis.plot(steps, np.asarray(table[name], dtype=float), marker="o", color="#1f77b4", label="ours")
        if references and name in references:
            axis.axhline(references[name], color="#d62728", linestyle="--", label="paper")
            axis.legend(fontsize=7)
        axis.set_title(name, fontsize=9)
        axis.set_xlabel("training step", fontsize=8)
        axis.tick_params(labelsize=7)
        axis.grid(alpha=0.3)
    figure.suptitle(title, fontsize=10)
    figure.tight_layout()
    plots.save_figure(figure, path)
    return figure


def parse_references(pairs: Sequence[str]) -> dict[str, float]:
    """``["NAME=VALUE", ...]`` (``--curve_reference``) as {name: value}; a ValueError naming a bad pair."""
    references = {}
    for pair in pairs:
        name, separator, value = pair.rpartition("=")
        try:
            references[name.strip()] = float(value)
        except ValueError:
            separator = ""
        if not separator or not name.strip():
            raise ValueError(
                f"--curve_reference={pair!r}: write MEASURE=VALUE, e.g. 'NMI (code vs digit)=0.889'."
            )
    return references
