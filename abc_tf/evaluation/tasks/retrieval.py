"""Cross-class retrieval grids (paper Fig. 4).

A grid has one query per class on the diagonal. Each row holds the nearest image of every other
class in embedding space. Suppose the embedding keeps what the classes share and drops what tells
them apart, such as a digit's style or a face's lighting. Then each row shows one style across every class.

Classes are digits (abc_tf.evaluation.tasks.mnist_style) or a family's groups (:func:`group_retrieval`).
Any grouped images work, the user's own folders included.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Sequence

import keras
import numpy as np
import tensorflow as tf
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from abc_tf import losses
from abc_tf.data.family import GroupedImages
from abc_tf.evaluation.estimators import plots
from abc_tf.runs.run_dir import embed

GROUPS_SHOWN = 8  # classes of a group grid (rows and columns)
IMAGES_PER_GROUP = 64  # candidates per group


@dataclasses.dataclass(frozen=True)
class RetrievalGrid:
    """indices [C, C]: row r holds its query, of class classes[r], at column r.

    Column c holds the nearest image of class classes[c] to that query. similarity [C, C] is to the query.
    """

    indices: np.ndarray
    similarity: np.ndarray
    classes: np.ndarray

    def as_dict(self) -> dict[str, Any]:
        return {
            "indices": self.indices.tolist(),
            "similarity": self.similarity.tolist(),
            "classes": self.classes.tolist(),
        }


def retrieval_grid(
    embeddings: np.ndarray,
    labels: np.ndarray,
    classes: Sequence[int],
    query_indices: Sequence[int] | None = None,
    similarity: str = "l2sq",
    seed: int = 0,
) -> RetrievalGrid:
    """The retrieval grid over a labelled pool.

    Args:
      embeddings: [N, D].
      labels: [N], the class of each image.
      classes: the classes, one row and one column each.
      query_indices: the query of each row, an image of class classes[r]. Default: one random image
        per class, drawn with ``seed``.
      similarity: how "nearest" is measured. It is the loss's similarity (docs/PAPERS.md section 1),
        computed by ``abc_tf.losses.pairwise_similarity`` in float64.
    """
    embeddings = np.asarray(embeddings, np.float64)
    labels = np.asarray(labels)
    classes = np.asarray(list(classes))
    if embeddings.ndim != 2 or labels.shape != (len(embeddings),):
        raise ValueError(f"Need embeddings [N, D] and labels [N], got {embeddings.shape} and {labels.shape}.")
    members = [np.flatnonzero(labels == value) for value in classes]
    empty = [int(value) for value, m in zip(classes, members) if len(m) == 0]
    if empty:
        raise ValueError(f"The retrieval pool has no image of class(es) {empty}.")
    if query_indices is None:
        rng = np.random.default_rng(seed)
        query_indices = [int(rng.choice(m)) for m in members]
    query_indices = np.asarray(query_indices, np.int64)
    if query_indices.shape != classes.shape or np.any(labels[query_indices] != classes):
        raise ValueError("query_indices must hold one image of each class, in the order of classes.")
    indices, scores = nearest_of_each_class(embeddings, labels, classes, query_indices, similarity)
    return RetrievalGrid(indices=indices, similarity=scores, classes=classes)


def nearest_of_each_class(
    embeddings: np.ndarray,
    labels: np.ndarray,
    classes: Sequence[int],
    query_indices: Sequence[int],
    similarity: str = "l2sq",
    batch_size: int = 512,
) -> tuple[np.ndarray, np.ndarray]:
    """Retrieval rows for many queries: ([Q, C] indices into the pool, [Q, C] their similarity).

    Column c of row q holds the image of class ``classes[c]`` nearest to query q, by ``similarity``
    as in :func:`retrieval_grid`, and its similarity to the query. The query stands in its own
    class's column.
    """
    embeddings = np.asarray(embeddings, np.float64)
    labels = np.asarray(labels)
    classes = list(classes)
    query_indices = np.asarray(query_indices, np.int64)
    members = [np.flatnonzero(labels == value) for value in classes]
    if any(len(m) == 0 for m in members):
        raise ValueError("The retrieval pool needs an image of every class.")
    rows, scores = [], []
    for start in range(0, len(query_indices), batch_size):
        queries = query_indices[start : start + batch_size]
        similarities = losses.pairwise_similarity(
            tf.constant(embeddings[queries]), tf.constant(embeddings), similarity
        ).numpy()  # [B, N]
        block = np.stack([m[np.argmax(similarities[:, m], axis=1)] for m in members], axis=1)
        block[np.arange(len(queries)), [classes.index(labels[q]) for q in queries]] = queries
        rows.append(block)
        scores.append(np.take_along_axis(similarities, block, axis=1))
    return np.concatenate(rows).astype(np.int64), np.concatenate(scores)


def _display(images: np.ndarray, ink: bool) -> np.ndarray:
    """float [N, H, W] gray or [N, H, W, 3], in [0, 1]. With ``ink``, dark strokes on white."""
    images = np.asarray(images)
    scaled = images.astype(np.float64) / (255.0 if images.dtype == np.uint8 else 1.0)
    if scaled.ndim == 4 and scaled.shape[-1] == 1:
        scaled = scaled[..., 0]
    if scaled.ndim not in (3, 4):
        raise ValueError(f"Expected images [N, H, W] or [N, H, W, C], got shape {images.shape}.")
    return 1.0 - scaled if ink else scaled


def plot_retrieval_grids(
    images: np.ndarray,
    grids: Sequence[tuple[str, RetrievalGrid]],
    path: str,
    class_names: Sequence[str] | None = None,
    ink: bool = False,
    caption: str = "red: queries; column c: the nearest image of class c to the row's query",
) -> None:
    """Writes the grids side by side as a PNG, with queries boxed on the diagonal.

    ``class_names`` label the rows and columns; default: the class values.
    ``ink`` shows gray images as dark strokes on white, for digits.
    """
    shown = _display(images, ink)
    height, width = shown.shape[1:3]
    cell_h, cell_w = height + 1, width + 1
    figure = Figure(figsize=(3.3 * len(grids), 3.6), dpi=100)
    for panel, (title, grid) in enumerate(grids):
        axis = figure.add_subplot(1, len(grids), panel + 1)
        size = len(grid.classes)
        mosaic = np.ones((size * cell_h + 1, size * cell_w + 1) + shown.shape[3:])
        for row in range(size):
            for col in range(size):
                mosaic[row * cell_h + 1 : (row + 1) * cell_h, col * cell_w + 1 : (col + 1) * cell_w] = shown[
                    grid.indices[row, col]
                ]
        axis.imshow(
            mosaic, cmap="gray" if mosaic.ndim == 2 else None, vmin=0, vmax=1, interpolation="nearest"
        )
        for k in range(size):
            axis.add_patch(
                Rectangle(
                    (k * cell_w + 0.5, k * cell_h + 0.5),
                    width,
                    height,
                    fill=False,
                    edgecolor="red",
                    linewidth=1.5,
                )
            )
        names = [str(name) for name in (class_names if class_names is not None else grid.classes)]
        axis.set_xticks([k * cell_w + width / 2 + 0.5 for k in range(size)], names, fontsize=6, rotation=90)
        axis.set_yticks([k * cell_h + height / 2 + 0.5 for k in range(size)], names, fontsize=6)
        axis.tick_params(length=0)
        axis.set_title(title, fontsize=9)
    figure.text(0.5, 0.01, caption, ha="center", fontsize=7)
    figure.tight_layout(rect=(0, 0.03, 1, 1))
    plots.save_figure(figure, path, colours=96)


def group_retrieval(
    encoders: Sequence[tuple[str, keras.Model]],
    grouped: GroupedImages,
    similarity: str,
    path: str,
    seed: int = 0,
) -> dict:
    """The retrieval grid over the groups of ``grouped`` for each (title, encoder).

    Draws up to GROUPS_SHOWN groups with ``seed``, and up to IMAGES_PER_GROUP candidates each.
    Every encoder gets the same queries. Writes the figure to ``path`` and returns the grids by title.
    """
    rng = np.random.default_rng(seed)
    groups = np.sort(
        rng.choice(len(grouped.group_names), min(GROUPS_SHOWN, len(grouped.group_names)), replace=False)
    )
    rows = np.concatenate(
        [rng.permutation(np.flatnonzero(grouped.groups == g))[:IMAGES_PER_GROUP] for g in groups]
    )
    images, labels = grouped.images[rows], grouped.groups[rows]
    queries = [int(rng.choice(np.flatnonzero(labels == g))) for g in groups]
    grids = [
        (title, retrieval_grid(embed(encoder, images), labels, groups, queries, similarity))
        for title, encoder in encoders
    ]
    names = [grouped.group_names[g][:14] for g in groups]
    plot_retrieval_grids(
        images,
        grids,
        path,
        class_names=names,
        caption="red: one query per group; column g: the nearest image of group g to the row's query",
    )
    return {
        "groups": [grouped.group_names[g] for g in groups],
        **{title: {"indices": rows[grid.indices].tolist()} for title, grid in grids},
    }
