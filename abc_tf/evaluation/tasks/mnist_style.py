"""MNIST digit-style isolation: retrieval grid, PCA thumbnails and style measures (paper Fig. 4, S7).

If the embedding holds style and not the digit, a retrieval row shows one handwriting style written as
all ten digits. Images are [N, 28, 28] or [N, 28, 28, 1]; x is the column, y the row, lengths in pixels.
"""

from __future__ import annotations

import os
from typing import Any, Sequence

import keras
import numpy as np
from matplotlib.figure import Figure
from matplotlib.offsetbox import AnnotationBbox, OffsetImage

from abc_tf import json_files
from abc_tf.config import ExperimentConfig
from abc_tf.data.mnist import digit_style
from abc_tf.data.mnist import family as mnist
from abc_tf.data.mnist import sources as mnist_sources
from abc_tf.evaluation import progress
from abc_tf.evaluation.tasks import factor_isolation, retrieval
from abc_tf.evaluation.estimators import noise, plots, probes, regression
from abc_tf.runs.run_dir import embed, load_run
from abc_tf.runs.training import untrained_encoder

NUM_CLASSES = 10
METRICS_FILE = "mnist_metrics.json"
# Digit colours of the figures (matplotlib's tab10, one per class).
_TAB10 = np.array(
    [
        [0.12, 0.47, 0.71],
        [1.00, 0.50, 0.05],
        [0.17, 0.63, 0.17],
        [0.84, 0.15, 0.16],
        [0.58, 0.40, 0.74],
        [0.55, 0.34, 0.29],
        [0.89, 0.47, 0.76],
        [0.50, 0.50, 0.50],
        [0.74, 0.74, 0.13],
        [0.09, 0.75, 0.81],
    ]
)


# ----------------------------------------------------------------------------- retrieval


# ----------------------------------------------------------------------------- PCA


def _spread_selection(points: np.ndarray, cells: int, rng: np.random.Generator) -> np.ndarray:
    """One random point per occupied cell of a cells x cells grid over the points' range, so thumbnails
    cover the scatter without piling up in its dense centre."""
    low, high = points.min(axis=0), points.max(axis=0)
    cell = np.floor((points - low) / np.maximum(high - low, 1e-12) * (cells - 1e-9)).astype(np.int64)
    keys = cell[:, 0] * cells + cell[:, 1]
    order = rng.permutation(len(points))
    _, first = np.unique(keys[order], return_index=True)
    return order[first]


def _ink_thumbnail(image: np.ndarray, colour: np.ndarray) -> np.ndarray:
    """A [H, W] ink image in [0, 1] as RGBA with the ink as alpha, so overlaps stay readable."""
    rgba = np.zeros(image.shape + (4,))
    rgba[..., :3] = colour
    rgba[..., 3] = image
    return rgba


def plot_pca_thumbnails(
    panels: Sequence[tuple[str, np.ndarray, np.ndarray, np.ndarray]],
    path: str,
    columns: int = 2,
    cells: int = 13,
    seed: int = 0,
) -> None:
    """PCA scatters with thumbnails: panels of (title, projection [N, 2], images [N, 28, 28], labels [N]).

    Dots are coloured by digit, with one thumbnail per occupied cell of a ``cells`` x ``cells`` grid.
    """
    rng = np.random.default_rng(seed)
    rows = int(np.ceil(len(panels) / columns))
    figure = Figure(figsize=(5.0 * columns, 4.6 * rows), dpi=72)
    for panel, (title, projection, images, labels) in enumerate(panels):
        axis = figure.add_subplot(rows, columns, panel + 1)
        gray = digit_style.as_gray(images)
        labels = np.asarray(labels).astype(np.int64)
        # At most 3000 dots: enough to show the density, and keeps the PNG small.
        dots = rng.permutation(len(projection))[:3000]
        axis.scatter(
            projection[dots, 0],
            projection[dots, 1],
            s=1.5,
            c=0.4 + 0.6 * _TAB10[labels[dots] % 10],
            linewidths=0,
        )
        for index in _spread_selection(projection, cells, rng):
            thumbnail = OffsetImage(_ink_thumbnail(gray[index], _TAB10[labels[index] % 10] * 0.8), zoom=0.75)
            axis.add_artist(AnnotationBbox(thumbnail, projection[index], frameon=False, pad=0.0))
        axis.set_title(title, fontsize=9)
        axis.set_xlabel("PC 1", fontsize=8)
        axis.set_ylabel("PC 2", fontsize=8)
        axis.tick_params(labelsize=7)
    figure.tight_layout()
    plots.save_figure(figure, path, colours=96)


def embedding_spread(embeddings: np.ndarray) -> dict[str, float]:
    """Scale of the embeddings, to read noise and length scales against: the RMS distance to the mean and
    ``noise.spread``."""
    centred = np.asarray(embeddings, np.float64) - np.mean(embeddings, axis=0)
    return {
        "rms_radius": float(np.sqrt(np.mean(np.sum(centred**2, axis=1)))),
        "rms_per_dimension": noise.spread(embeddings),
    }


# ----------------------------------------------------------------------------- the whole evaluation


def evaluate_mnist_run(
    run: str | keras.Model,
    config: ExperimentConfig | None,
    out_dir: str,
    untrained: keras.Model | None = None,
    probe_epochs: int = 30,
    seed: int = 0,
) -> dict[str, Any]:
    """Evaluates digit-style isolation of a trained encoder on the MNIST test split.

    ``run`` is a run directory or a trained encoder; ``untrained`` defaults to the run's architecture at
    its initial weights. Returns the metrics also written to ``mnist_metrics.json``: for "trained" and
    "untrained", style predictability (measured and, on procedural digits, true), the digit probe's
    accuracy with and without noise, PCA and its correlation with style, the spread and the retrieval
    rows' style spread; with a held-out digit, "raw_pixels" for nearest neighbours in pixel space.
    """
    if isinstance(run, str):
        loaded = load_run(run)
        encoder, config = loaded.encoder, config or loaded.config
    else:
        if config is None:
            raise ValueError("evaluate_mnist_run needs the config when given an encoder.")
        encoder = run
    if untrained is None:
        untrained = untrained_encoder(config)
    holdout = mnist.parse_holdout_digit(config.data.holdout_digit)
    data = mnist_sources.load_mnist(config)
    images, labels = np.asarray(data.x_test), np.asarray(data.y_test).astype(np.int64)
    os.makedirs(out_dir, exist_ok=True)

    measures = digit_style.style_measures(images)
    metrics: dict[str, Any] = {
        "data_source": data.source,
        "holdout_digit": holdout,
        "num_test_images": int(len(labels)),
        "length_scale": config.method.length_scale(),
        "style_measure_means": {name: float(np.mean(values)) for name, values in measures.items()},
    }
    grids, pca_panels = [], []
    seen_mask = labels != (-1 if holdout is None else holdout)
    for name, model in (("untrained", untrained), ("trained", encoder)):
        embeddings = embed(model, images[..., np.newaxis], batch_size=2000)
        grid = retrieval.retrieval_grid(
            embeddings, labels, range(NUM_CLASSES), similarity=config.embedding_similarity, seed=seed
        )
        grids.append((name, grid))
        # The components of the training digits' embeddings; the held-out digit shown in them.
        projection, _ = plots.principal_components(embeddings, 2, basis_of=embeddings[seen_mask])
        pca_panels.append(
            (f"{name}: digits seen in training", projection[seen_mask], images[seen_mask], labels[seen_mask])
        )
        if holdout is not None:
            pca_panels.append(
                (
                    f"{name}: held-out digit {holdout}",
                    projection[~seen_mask],
                    images[~seen_mask],
                    labels[~seen_mask],
                )
            )
        _, all_ratios = plots.principal_components(embeddings[seen_mask], embeddings.shape[1])
        digit_probe = {}
        # With noise at the length scale, the embedding's units matter: this is the paper's probe.
        # Without noise only the information matters, so we standardise first.
        # Untrained embeddings are ~100x smaller, and a probe on them would barely learn.
        # A method without a length scale gets 0.1 x the spread; see factor_isolation.noise_sigma.
        standardised = (embeddings - embeddings.mean(axis=0)) / (embeddings.std(axis=0) + 1e-12)
        noise_sigma, rule = factor_isolation.noise_sigma(config, embeddings)
        unit = factor_isolation.measuring_unit(rule, embeddings)
        for label, inputs, sigma in (
            ("noise_at_length_scale", embeddings / unit, noise_sigma / unit),
            ("no_noise_standardised", standardised, 0.0),
        ):
            result = probes.probe_accuracies(
                inputs,
                labels,
                sigma,
                names=["digit"],
                num_classes=[NUM_CLASSES],
                settings=probes.ProbeSettings(epochs=probe_epochs),
                seed=seed,
            )
            digit_probe[label] = float(result.accuracy[0])
        digit_probe["chance"] = 1.0 / NUM_CLASSES
        metrics[name] = {
            "style_r2": regression.style_predictability(embeddings, measures, labels, holdout, seed=seed),
            "digit_probe_accuracy": digit_probe,
            "digit_probe_noise": {"sigma": float(noise_sigma), "rule": rule},
            "pca_explained_variance_ratio": [float(r) for r in all_ratios],
            "pca_top2_variance": float(np.sum(all_ratios[:2])),
            "pc_style_correlation": _pc_style_correlation(projection, measures, labels, seen_mask),
            "embedding_spread": embedding_spread(embeddings),
            "retrieval_grid": grid.as_dict(),
            "retrieval_row_style_spread": _row_style_spread(grid, measures),
        }
        if holdout is not None:
            metrics[name]["held_out_row_style_spread"] = held_out_row_style_spread(
                embeddings, labels, measures, holdout, config.embedding_similarity
            )
        if data.test_style is not None:  # the procedural digits: the renderer's true style factors
            metrics[name]["true_style_r2"] = regression.style_predictability(
                embeddings, data.test_style, labels, holdout, seed=seed
            )
    if holdout is not None:  # the floor of any encoder: nearest neighbours in raw pixels
        pixels = images.reshape(len(images), -1).astype(np.float64)
        metrics["raw_pixels"] = {
            "held_out_row_style_spread": held_out_row_style_spread(pixels, labels, measures, holdout, "l2sq")
        }
    names = [f"{digit}*" if digit == holdout else str(digit) for digit in range(NUM_CLASSES)]
    retrieval.plot_retrieval_grids(
        images,
        grids,
        os.path.join(out_dir, "retrieval.png"),
        class_names=names,
        ink=True,
        caption="red: queries; columns: nearest test image of each digit"
        + ("; * held out of training" if holdout is not None else ""),
    )
    # Panels as in the paper: untrained | trained, seen digits above the held-out digit.
    ordered = [pca_panels[i] for i in ((0, 2, 1, 3) if holdout is not None else (0, 1))]
    plot_pca_thumbnails(ordered, os.path.join(out_dir, "pca.png"), columns=2, seed=seed)
    metrics["figures"] = ["retrieval.png", "pca.png"]  # file names in out_dir, as every task lists them
    json_files.write_json(os.path.join(out_dir, METRICS_FILE), metrics, sort_keys=True)
    progress.wrote(os.path.join(out_dir, METRICS_FILE))
    return metrics


def true_style_summary(metrics: dict[str, Any]) -> str | None:
    """One console line of ``true_style_r2`` (trained / untrained); None without true style factors."""
    trained = metrics.get("trained")
    if not isinstance(trained, dict) or "true_style_r2" not in trained:
        return None
    key = "ridge_within_digit_seen_digits"
    text = ", ".join(
        f"{factor} {entry[key]:.2f}/{metrics['untrained']['true_style_r2'][factor][key]:.2f}"
        for factor, entry in metrics["trained"]["true_style_r2"].items()
    )
    return f"  true style R^2 (ridge, within digit, trained/untrained): {text}"


def _row_style_spread(grid: retrieval.RetrievalGrid, measures: dict[str, np.ndarray]) -> dict[str, float]:
    """How uniform the style of each row of the retrieval grid is (:func:`row_style_spread`)."""
    return row_style_spread(grid.indices, measures)


def row_style_spread(rows: np.ndarray, measures: dict[str, np.ndarray]) -> dict[str, float]:
    """How alike in style the images of each retrieval row are.

    ``rows`` is [R, C] indices into the pool. Per measure (slant, thickness): the mean over rows of
    the measure's std along the row, over its std in the whole pool. Below 1, a row shares a style;
    about 1, a row is as varied as random images.
    """
    out = {}
    for name in ("slant", "thickness"):
        values = measures[name][rows]  # [R, C]
        out[name] = float(np.mean(values.std(axis=1)) / max(float(np.std(measures[name])), 1e-12))
    return out


def held_out_row_style_spread(
    embeddings: np.ndarray,
    labels: np.ndarray,
    measures: dict[str, np.ndarray],
    holdout: int,
    similarity: str,
) -> dict[str, float]:
    """:func:`row_style_spread` over every image of the held-out digit as a query.

    The paper claims ABC's rows are closer in style than CC-VAE's; this measures it over all queries.
    """
    queries = np.flatnonzero(labels == holdout)
    rows, _ = retrieval.nearest_of_each_class(embeddings, labels, range(NUM_CLASSES), queries, similarity)
    return row_style_spread(rows, measures)


def _pc_style_correlation(
    projection: np.ndarray, measures: dict[str, np.ndarray], labels: np.ndarray, seen_mask: np.ndarray
) -> dict[str, dict[str, float]]:
    """How much of slant and thickness the PCA plane shows, within digit.

    Per digit mean removed: |correlation| with PC 1 and PC 2 (PCA signs are arbitrary) and the R^2 of
    a least-squares fit on both PCs.
    """
    out: dict[str, dict[str, float]] = {}
    for split, mask in (("seen_digits", seen_mask), ("holdout_digit", ~seen_mask)):
        if not np.any(mask):
            continue
        pcs = np.stack(
            [regression.centre_by_class(projection[mask, k], labels[mask]) for k in range(2)], axis=1
        )
        entry = {}
        for name in ("slant", "thickness"):
            target = regression.centre_by_class(measures[name][mask], labels[mask])
            for k in range(2):
                denominator = np.sqrt(np.sum(pcs[:, k] ** 2) * np.sum(target**2))
                entry[f"abs_corr_pc{k + 1}_{name}"] = (
                    float(abs(np.sum(pcs[:, k] * target)) / denominator) if denominator > 0 else float("nan")
                )
            weights, *_ = np.linalg.lstsq(pcs, target, rcond=None)
            entry[f"pc_plane_r2_{name}"] = regression.r2_score(target, pcs @ weights)
        out[split] = entry
    return out
