"""Figures of factor isolation (paper Fig. 3b/c, S1, S2, S3), written as PNG files.

Figures are built on an Agg canvas without pyplot state, so nothing here changes the process-wide
backend. Inactive factors are marked as in the paper: shaded columns, dashed curves.
Shapes: F factors, S seeds or repeats, K noise scales, N points.
"""

from __future__ import annotations

import io
import os
from typing import Mapping, Sequence

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from abc_tf.evaluation import progress

DPI = 90
KINDS = ("bars", "violin", "box")  # how plot_factor_distribution and plot_conditions draw values
_SHADE = "#d9d9d9"


def new_figure(width: float, height: float) -> Figure:
    figure = Figure(figsize=(width, height), dpi=DPI)
    FigureCanvasAgg(figure)  # attaches the Agg canvas that savefig and print_png use
    return figure


def save_figure(figure: Figure, path: str | os.PathLike, colours: int = 128) -> None:
    """Writes ``figure`` as a PNG with an adaptive palette of ``colours`` colours, creating the folder.

    Scatter plots and thumbnails compress badly as RGB; the palette makes the files several times smaller
    with no visible change. The file is recorded (``progress.wrote``).
    """
    directory = os.path.dirname(os.fspath(path))
    if directory:
        os.makedirs(directory, exist_ok=True)
    with open(path, "wb") as handle:
        handle.write(compact_png(figure_to_png(figure), colours))
    progress.wrote(path)


def compact_png(data: bytes, colours: int = 128) -> bytes:
    """Re-encodes PNG bytes with an adaptive palette of ``colours`` colours."""
    from PIL import Image  # matplotlib's own dependency

    with Image.open(io.BytesIO(data)) as image:
        palette = image.convert("RGB").quantize(colors=colours, method=Image.Quantize.MEDIANCUT)
        buffer = io.BytesIO()
        palette.save(buffer, format="PNG", optimize=True)
    return buffer.getvalue()


def figure_to_png(figure: Figure) -> bytes:
    """PNG bytes of ``figure`` at its own dpi, cropped to what is drawn. Also used for TensorBoard images."""
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi="figure", bbox_inches="tight")
    return buffer.getvalue()


def finish_figure(
    figure: Figure, path: str | os.PathLike | None, title: str | None = None, axes=None
) -> Figure:
    """Titles, lays out and writes the figure to ``path`` unless None; returns it.

    The title goes on ``axes`` when given, else above all panels.
    """
    if title:
        if axes is not None:
            axes.set_title(title, fontsize=10)
        else:
            figure.suptitle(title, fontsize=10)
    figure.tight_layout()
    if path is not None:
        save_figure(figure, path)
    return figure


def principal_components(
    embeddings: np.ndarray, num_components: int = 2, basis_of: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Projects embeddings [N, D] on the first principal components of ``basis_of`` [M, D].

    Returns (projections [N, k], explained variance ratio in ``basis_of`` [k]), k = min(num_components, D).
    """
    embeddings = np.asarray(embeddings, dtype=np.float64)
    reference = embeddings if basis_of is None else np.asarray(basis_of, dtype=np.float64)
    if (
        embeddings.ndim != 2
        or reference.ndim != 2
        or reference.shape[0] < 2
        or embeddings.shape[1] != reference.shape[1]
    ):
        raise ValueError(
            "PCA needs embeddings [N, D] and a basis [M, D] with M >= 2, "
            f"got {embeddings.shape} and {reference.shape}."
        )
    mean = reference.mean(axis=0)
    _, singular, components = np.linalg.svd(reference - mean, full_matrices=False)
    k = min(num_components, reference.shape[1])
    variance = singular**2
    total = variance.sum()
    ratio = variance[:k] / total if total > 0 else np.zeros(k)
    return (embeddings - mean) @ components[:k].T, ratio


def _factor_colormap(name: str) -> str:
    # Hues wrap around, so a cyclic map shows neighbouring values as neighbouring colours.
    return "hsv" if "hue" in name else "viridis"


def plot_embeddings_pca(
    embeddings: np.ndarray,
    factors: np.ndarray,
    names: Sequence[str],
    path: str | os.PathLike | None = None,
    max_points: int = 256,
    title: str | None = None,
    seed: int = 0,
) -> Figure:
    """One scatter panel per factor of embeddings [N, D] on their first two principal components,
    coloured by that factor's value (Fig. 3b / S1a)."""
    embeddings = np.asarray(embeddings)
    factors = np.asarray(factors)
    if factors.ndim == 1:
        factors = factors[:, None]
    if factors.shape != (embeddings.shape[0], len(names)):
        raise ValueError(
            f"Factors {factors.shape} do not match {embeddings.shape[0]} points and {len(names)} names."
        )
    if embeddings.shape[0] > max_points:
        keep = np.random.default_rng(seed).choice(embeddings.shape[0], max_points, replace=False)
        embeddings, factors = embeddings[keep], factors[keep]
    projected, ratio = principal_components(embeddings, 2)
    if projected.shape[1] == 1:
        projected = np.concatenate([projected, np.zeros_like(projected)], axis=1)
        ratio = np.append(ratio, 0.0)
    columns = len(names)
    figure = new_figure(2.3 * columns, 2.6)
    for index, name in enumerate(names):
        axes = figure.add_subplot(1, columns, index + 1)
        axes.scatter(projected[:, 0], projected[:, 1], c=factors[:, index], cmap=_factor_colormap(name), s=7)
        axes.set_title(f"by {name}", fontsize=9)
        axes.set_xticks([])
        axes.set_yticks([])
        if index == 0:
            axes.set_xlabel(f"PC1 ({ratio[0]:.0%})", fontsize=8)
            axes.set_ylabel(f"PC2 ({ratio[1]:.0%})", fontsize=8)
    return finish_figure(figure, path, title)


def check_inactive(names: Sequence[str], inactive: Sequence[str]) -> None:
    unknown = sorted(set(inactive) - set(names))
    if unknown:
        raise ValueError(f"Inactive factors {unknown} are not among the factor names {list(names)}.")


def _shade_inactive(axes, names: Sequence[str], inactive: Sequence[str]) -> None:
    check_inactive(names, inactive)
    for index, name in enumerate(names):
        if name in inactive:
            axes.axvspan(index - 0.5, index + 0.5, color=_SHADE, zorder=0)


def _as_seed_matrix(values: np.ndarray, num_factors: int) -> np.ndarray:
    values = np.asarray(values, dtype=np.float64)
    if values.ndim == 1:
        values = values[None, :]
    if values.ndim != 2 or values.shape[1] != num_factors:
        raise ValueError(f"Expected values [F] or [S, F] with F = {num_factors}, got {values.shape}.")
    return values


def _factor_axes(axes, names: Sequence[str], ylabel: str) -> None:
    axes.set_xticks(range(len(names)))
    axes.set_xticklabels([name.replace("_", "\n") for name in names], fontsize=8)
    axes.set_xlim(-0.5, len(names) - 0.5)
    axes.set_ylabel(ylabel, fontsize=9)


def _chance_lines(axes, chance: Sequence[float] | None) -> None:
    if chance is None:
        return
    for index, level in enumerate(chance):
        axes.hlines(level, index - 0.4, index + 0.4, colors="k", linestyles="dashed", linewidth=1, zorder=3)


def _draw_bars(
    axes,
    heights: np.ndarray,
    names: Sequence[str],
    inactive: Sequence[str],
    chance: Sequence[float] | None,
    ylabel: str,
) -> np.ndarray:
    """A bar per factor [F] on shaded inactive columns, with chance levels; returns the positions."""
    _shade_inactive(axes, names, inactive)
    positions = np.arange(len(names))
    axes.bar(positions, heights, width=0.6, color="#4c72b0", zorder=2)
    _chance_lines(axes, chance)
    _factor_axes(axes, names, ylabel)
    return positions


def plot_factor_distribution(
    values: np.ndarray,
    names: Sequence[str],
    inactive: Sequence[str] = (),
    path: str | os.PathLike | None = None,
    ylabel: str = "I(U; G) [nats]",
    title: str | None = None,
    kind: str = "violin",
    chance: Sequence[float] | None = None,
) -> Figure:
    """Values per factor, [F] or over seeds [S, F], with inactive factors shaded.

    Optional chance levels [F] are dashed lines.
      ``kind``: "bars" (the mean, every seed a dot), "violin" or "box".
    """
    values = _as_seed_matrix(values, len(names))
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {', '.join(KINDS)}, got {kind!r}.")
    figure = new_figure(4.8, 3.0)
    axes = figure.add_subplot(1, 1, 1)
    _draw_distribution(axes, values, names, inactive, kind, chance, ylabel)
    return finish_figure(figure, path, title, axes)


def _draw_distribution(
    axes,
    values: np.ndarray,
    names: Sequence[str],
    inactive: Sequence[str],
    kind: str,
    chance: Sequence[float] | None,
    ylabel: str,
) -> None:
    if kind == "bars":
        positions = _draw_bars(axes, values.mean(axis=0), names, inactive, chance, ylabel)
        if values.shape[0] > 1:
            for row, offset in zip(values, np.linspace(-0.15, 0.15, values.shape[0])):
                axes.scatter(positions + offset, row, s=8, color="k", zorder=4)
        return
    _shade_inactive(axes, names, inactive)
    positions = np.arange(len(names))
    # A violin needs spread; with one seed (or identical values) draw boxes instead.
    if kind == "violin" and values.shape[0] > 2 and np.all(values.std(axis=0) > 0):
        parts = axes.violinplot(values, positions=positions, widths=0.7, showmeans=True)
        for body in parts["bodies"]:
            body.set_facecolor("#4c72b0")
            body.set_alpha(0.7)
    else:
        axes.boxplot(values, positions=positions, widths=0.5)
    axes.scatter(np.tile(positions, values.shape[0]), values.ravel(), s=6, color="k", zorder=4)
    _chance_lines(axes, chance)
    _factor_axes(axes, names, ylabel)


def plot_conditions(
    results: Mapping[str, np.ndarray],
    names: Sequence[str],
    inactive: Mapping[str, Sequence[str]],
    path: str | os.PathLike | None = None,
    ylabel: str = "I(U; G) [nats]",
    title: str | None = None,
    chance: Sequence[float] | None = None,
    kind: str = "violin",
) -> Figure:
    """Fig. 3c layout: one row per condition, with distributions over seeds.

    Conditions map label -> values [S, F]. ``kind`` is as in :func:`plot_factor_distribution`.
    Each row shades its own inactive factors.
    """
    if not results:
        raise ValueError("plot_conditions needs at least one condition.")
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {', '.join(KINDS)}, got {kind!r}.")
    rows = len(results)
    figure = new_figure(5.2, 1.9 * rows + 0.6)
    shared = None
    for row, (label, values) in enumerate(results.items()):
        axes = figure.add_subplot(rows, 1, row + 1, sharey=shared)
        shared = shared or axes
        _draw_distribution(
            axes, _as_seed_matrix(values, len(names)), names, inactive.get(label, ()), kind, chance, ylabel
        )
        axes.set_title(label, fontsize=9)
        if row < rows - 1:
            axes.set_xticklabels([])
    return finish_figure(figure, path, title)


def plot_probe_accuracies(
    accuracy: np.ndarray,
    chance: Sequence[float],
    names: Sequence[str],
    inactive: Sequence[str] = (),
    path: str | os.PathLike | None = None,
    title: str | None = None,
) -> Figure:
    """Probe test accuracy per factor, [F] or [S, F], with dashed chance levels (Fig. S2)."""
    figure = plot_factor_distribution(accuracy, names, inactive, None, "test accuracy", title, "bars", chance)
    figure.axes[0].set_ylim(0, 1.02)
    return finish_figure(figure, path)


def plot_factor_summary(
    rows: Sequence[dict], path: str | os.PathLike | None = None, title: str | None = None
) -> Figure:
    """The end-of-run summary figure: MI in nats and probe accuracy per factor, with chance levels.

    Inactive factors are shaded. A missing value (None) leaves its bar out.
    rows: one per factor, as abc_tf.evaluation.run_summary writes them. Keys: "factor", "trained_as"
    ("inactive" or not), "mutual_information_nats", "probe_accuracy", "chance".
    """
    names = [row["factor"] for row in rows]
    inactive = [row["factor"] for row in rows if row["trained_as"] == "inactive"]
    mutual_information, accuracy = (
        np.array([np.nan if row[key] is None else row[key] for row in rows], np.float64)
        for key in ("mutual_information_nats", "probe_accuracy")
    )
    chance = [row["chance"] for row in rows]
    figure = new_figure(8.4, 3.0)
    panels = ((mutual_information, "I(U; G) [nats]", None), (accuracy, "probe accuracy", chance))
    for column, (values, label, levels) in enumerate(panels, start=1):
        axes = figure.add_subplot(1, 2, column)
        # MINE's bound can dip just below 0 where there is no information; drawn as 0.
        _draw_bars(
            axes,
            np.maximum(np.nan_to_num(np.asarray(values, np.float64)), 0.0),
            names,
            inactive,
            levels,
            label,
        )
        axes.set_ylim(bottom=0.0)
    return finish_figure(figure, path, title)


def _draw_grouped_bars(
    axes,
    groups: Sequence[str],
    series: Mapping[str, np.ndarray],
    ylabel: str,
    chance: Sequence[float] | None = None,
) -> None:
    """A bar group per entry of ``groups`` [G], with a bar per series; NaN values leave their bar out.

    A series maps label -> values [G], or [S, G] over seeds: the mean, every seed a dot.
    """
    width = 0.8 / max(len(series), 1)
    for index, (label, values) in enumerate(series.items()):
        values = _as_seed_matrix(values, len(groups))
        present = np.isfinite(values)
        counts = present.sum(axis=0)
        means = np.where(
            counts > 0, np.where(present, values, 0.0).sum(axis=0) / np.maximum(counts, 1), np.nan
        )
        positions = np.arange(len(groups)) + (index - (len(series) - 1) / 2) * width
        axes.bar(positions, means, width=0.9 * width, color=f"C{index}", label=label, zorder=2)
        if values.shape[0] > 1:
            rows, columns = np.nonzero(present)
            axes.scatter(positions[columns], values[rows, columns], s=6, color="k", zorder=4)
    _chance_lines(axes, chance)
    _factor_axes(axes, groups, ylabel)
    axes.legend(fontsize=7, loc="best")


def plot_grouped_bars(
    groups: Sequence[str],
    series: Mapping[str, np.ndarray],
    path: str | os.PathLike | None = None,
    ylabel: str = "score",
    title: str | None = None,
) -> Figure:
    """One bar group per entry of ``groups`` and one bar per series of values [G] or [S, G] over seeds."""
    figure = new_figure(max(4.8, 0.35 * len(groups) * max(len(series), 2) + 1.5), 3.0)
    axes = figure.add_subplot(1, 1, 1)
    _draw_grouped_bars(axes, groups, series, ylabel)
    return finish_figure(figure, path, title, axes)


def plot_comparison(
    panels: Sequence[tuple[str, Sequence[str], Mapping[str, np.ndarray], Sequence[float] | None]],
    path: str | os.PathLike | None = None,
    title: str | None = None,
) -> Figure:
    """Panels one above the other, with a bar per compared run in every group.

    Each panel is ``(ylabel, groups [G], series {row: values [G] or [S, G]}, chance [G] or None)``.
    """
    if not panels:
        raise ValueError("plot_comparison needs at least one panel.")
    rows = max(len(series) for _, _, series, _ in panels)
    figure = new_figure(
        max(6.0, 0.3 * rows * max(len(groups) for _, groups, _, _ in panels) + 1.5), 2.6 * len(panels) + 0.4
    )
    for index, (ylabel, groups, series, chance) in enumerate(panels, start=1):
        _draw_grouped_bars(figure.add_subplot(len(panels), 1, index), groups, series, ylabel, chance)
    return finish_figure(figure, path, title)
