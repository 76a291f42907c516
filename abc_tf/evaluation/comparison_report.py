"""The report of a comparison (``abc_tf.evaluation.comparison.compare``), from its result alone.

:func:`markdown` writes the tables of comparison.md, :func:`plot` the figure, :func:`write` all
three files. ``scripts/doc_tables.py`` writes the documents' comparison tables with
:func:`markdown`, so a table cannot drift from its comparison.json.
"""

from __future__ import annotations

import os
from typing import Any, Sequence

import numpy as np

from abc_tf import json_files
from abc_tf.evaluation import progress
from abc_tf.evaluation.estimators import disentanglement as dis, plots

FILES = ("comparison.md", "comparison.json", "comparison.png")
CLUSTER_MEASURES = (
    ("nearest_neighbour", "1-NN accuracy per factor"),
    ("kmeans_nmi", "k-means NMI per factor"),
)


def _cell(summary: dict[str, Any] | None, digits: int = 3) -> str:
    if summary is None:
        return "-"
    if len(summary["values"]) > 1:
        return f"{summary['mean']:.{digits}f} ± {summary['std']:.{digits}f}"
    return f"{summary['mean']:.{digits}f}"


def _table(header: Sequence[str], lines: Sequence[Sequence[str]]) -> list[str]:
    return ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)] + [
        "| " + " | ".join(line) + " |" for line in lines
    ]


def markdown(result: dict[str, Any]) -> str:
    """comparison.md: the caption, then the tables of runs, MINE information, probe accuracy and
    disentanglement scores (a table only when some row has its values)."""
    rows, names = result["rows"], result["factors"]
    out = [f"# Comparison of {len(rows)} rows", "", result["caption"], "", "## Runs", ""]
    out += _table(
        ["row", "method", "supervision", "embedding dim", "training steps", "runs", "noise sigma (rule)"],
        [
            [
                row["label"],
                row["method"],
                row["supervision"],
                str(row["embedding_dim"]),
                str(row["steps"]),
                str(max(len(row["run_dirs"]), 1)),
                f"{_cell(row['sigma'], 4)} ({row['noise_rule']})",
            ]
            for row in rows
        ],
    )

    def marked(row, name):
        return "*" if name in row["inactive"] else ""

    for key, title in (
        ("mine", "MINE information per factor (nats)"),
        ("probe_accuracy", "Probe test accuracy per factor"),
    ):
        if any(key in row for row in rows):
            lines = [
                [row["label"]] + [_cell(row.get(key, {}).get(n)) + marked(row, n) for n in names]
                for row in rows
            ]
            if key == "probe_accuracy":
                chance = next(row["chance"] for row in rows if "chance" in row)
                lines.append(["chance"] + [f"{chance[n]:.3f}" for n in names])
            out += ["", f"## {title}", ""] + _table(["row"] + names, lines)
    for key, title in CLUSTER_MEASURES:
        if any(key in row for row in rows):
            lines = [
                [row["label"]] + [_cell(row.get(key, {}).get(n)) + marked(row, n) for n in names]
                for row in rows
            ]
            out += ["", f"## {title}", ""] + _table(["row"] + names, lines)
    labels = list(dict.fromkeys(label for row in rows for label in row.get("method_measures", {})))
    if labels:
        lines = [
            [row["label"]] + [_cell(row.get("method_measures", {}).get(label)) for label in labels]
            for row in rows
        ]
        out += ["", "## The methods' own measures", ""] + _table(["row"] + labels, lines)
    keys = [
        (key, label)
        for key, _, _, label in dis.HEADLINE
        if any(key in row.get("disentanglement", {}) for row in rows)
    ]
    if keys:
        lines = [
            [row["label"]] + [_cell(row.get("disentanglement", {}).get(key)) for key, _ in keys]
            for row in rows
        ]
        out += ["", f"## Disentanglement scores (preset {result['disentanglement_preset']})", ""]
        out += _table(["row"] + [label for _, label in keys], lines)
    skipped: dict[tuple[str, str], list[str]] = {}
    for row in rows:
        for score, reason in row.get("disentanglement_skipped", {}).items():
            skipped.setdefault((score, reason), []).append(row["label"])
    for (score, reason), labels in skipped.items():
        which = "every row" if len(labels) == len(rows) else ", ".join(labels)
        out.append(f"\n{score} not computed for {which}: {reason}.")
    for row in rows:
        collapsed = [
            seed
            for seed in row["seeds"]
            if seed.get("disentanglement", {}).get("results", {}).get("factor_vae", {}).get("num_active_dims")
            == 0
        ]
        if collapsed:
            settings = collapsed[0]["disentanglement"]["settings"]
            threshold = f"{settings['factor_vae_prune_threshold']:g}"
            if settings.get("factor_vae_prune_relative"):  # absent from results written before it
                threshold += " x the codes' spread"
            out.append(
                f"\n{row['label']}: FactorVAE found no code dimension with standard deviation >= {threshold} "
                f"(the embedding's spread is {collapsed[0]['spread']:.3g}) in {len(collapsed)} of "
                f"{len(row['seeds'])} seeds and scores 0 there, as disentanglement_lib defines it."
            )
    return "\n".join(out) + "\n"


def _series(rows: list[dict[str, Any]], key: str, columns: Sequence[str]) -> dict[str, np.ndarray]:
    """{row label: values [S, G]} of one measure (NaN where a row lacks a value)."""
    series = {}
    for row in rows:
        seeds = max(len(row["seeds"]), 1)
        table = np.full((seeds, len(columns)), np.nan)
        for index, column in enumerate(columns):
            if column in row.get(key, {}):
                table[:, index] = row[key][column]["values"]
        series[row["label"]] = table
    return series


def plot(result: dict[str, Any], path: str) -> None:
    """comparison.png: MINE information, probe accuracy and 1-NN accuracy per factor, the
    disentanglement scores; a bar per row in every group, seeds as dots."""
    rows, names = result["rows"], result["factors"]
    panels = []
    if any("mine" in row for row in rows):
        panels.append(("I(U; G) [nats]", names, _series(rows, "mine", names), None))
    if any("probe_accuracy" in row for row in rows):
        chance = next(row["chance"] for row in rows if "chance" in row)
        panels.append(
            ("probe accuracy", names, _series(rows, "probe_accuracy", names), [chance[n] for n in names])
        )
    if any("nearest_neighbour" in row for row in rows):
        panels.append(("1-NN accuracy", names, _series(rows, "nearest_neighbour", names), None))
    keys = [
        (key, label)
        for key, _, _, label in dis.HEADLINE
        if any(key in row.get("disentanglement", {}) for row in rows)
    ]
    if keys:
        panels.append(
            (
                "score",
                [label for _, label in keys],
                _series(rows, "disentanglement", [k for k, _ in keys]),
                None,
            )
        )
    if not panels:
        raise ValueError("Nothing was measured: enable MINE, probes or the disentanglement scores.")
    plots.plot_comparison(panels, path, f"{len(rows)} rows on one {result['sample']['data']} sample")


def write(result: dict[str, Any], out_dir: str) -> None:
    """Writes comparison.md, comparison.json and comparison.png into ``out_dir``."""
    os.makedirs(out_dir, exist_ok=True)
    markdown_path, json_path, figure_path = (os.path.join(out_dir, name) for name in FILES)
    json_files.write_json(json_path, result)
    with open(markdown_path, "w") as handle:
        handle.write(markdown(result))
    progress.wrote(markdown_path)
    progress.wrote(json_path)
    plot(result, figure_path)
