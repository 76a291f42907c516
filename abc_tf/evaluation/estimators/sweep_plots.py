"""Mutual information against the noise scale (paper Figs. S1c,d and S3).

One sweep, or several side by side. Inactive factors are dashed; the loss's length scale is dotted.
"""

from __future__ import annotations

import os
from typing import Mapping, Sequence

import numpy as np
from matplotlib.figure import Figure

from abc_tf.evaluation.estimators import plots


def _draw_sweep(axes, sigmas, values, names, inactive, length_scale) -> None:
    colours = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"]
    for index, name in enumerate(names):
        style = "--" if name in inactive else "-"
        axes.plot(
            sigmas, values[:, index], style, color=colours[index % len(colours)], label=name, linewidth=1.4
        )
    if length_scale is not None:
        axes.axvline(length_scale, color="k", linestyle=":", linewidth=1.2)
    axes.set_xscale("log")
    axes.set_xlabel("noise sigma", fontsize=8)


def plot_mi_sweep(
    sigmas: np.ndarray,
    values: np.ndarray,
    names: Sequence[str],
    inactive: Sequence[str] = (),
    length_scale: float | None = None,
    path: str | os.PathLike | None = None,
    title: str | None = None,
    ylabel: str = "I(U + noise; G) [nats]",
) -> Figure:
    """MI against noise scale (Fig. S1c,d): values [K, F] over sigmas [K], on a log axis.

    Inactive factors are dashed. The loss's length scale is a dotted vertical line.
    """
    sigmas = np.asarray(sigmas, dtype=np.float64)
    values = np.asarray(values, dtype=np.float64)
    if values.shape != (len(sigmas), len(names)):
        raise ValueError(
            f"Sweep values {values.shape} do not match {len(sigmas)} sigmas x {len(names)} factors."
        )
    plots.check_inactive(names, inactive)
    figure = plots.new_figure(4.8, 3.2)
    axes = figure.add_subplot(1, 1, 1)
    _draw_sweep(axes, sigmas, values, names, inactive, length_scale)
    axes.set_ylabel(ylabel, fontsize=9)
    axes.legend(fontsize=7, frameon=False)
    return plots.finish_figure(figure, path, title, axes)


def plot_sweep_grid(
    panels: Sequence[Mapping],
    names: Sequence[str],
    path: str | os.PathLike | None = None,
    columns: int = 2,
    title: str | None = None,
    ylabel: str = "I [nats]",
) -> Figure:
    """Several noise sweeps side by side (Fig. S3).

    Each panel is a mapping with keys ``sigmas`` [K], ``values`` [K, F], ``inactive`` (names),
    ``length_scale`` and ``label``.
    """
    if not panels:
        raise ValueError("plot_sweep_grid needs at least one panel.")
    rows = int(np.ceil(len(panels) / columns))
    figure = plots.new_figure(3.6 * columns, 2.6 * rows)
    shared = None
    for index, panel in enumerate(panels):
        axes = figure.add_subplot(rows, columns, index + 1, sharex=shared, sharey=shared)
        shared = shared or axes
        _draw_sweep(
            axes,
            np.asarray(panel["sigmas"]),
            np.asarray(panel["values"]),
            names,
            panel.get("inactive", ()),
            panel.get("length_scale"),
        )
        axes.set_title(panel.get("label", ""), fontsize=8)
        axes.set_ylabel(ylabel, fontsize=8)
    figure.axes[0].legend(fontsize=6, frameon=False)
    return plots.finish_figure(figure, path, title)
