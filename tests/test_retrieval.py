"""abc_tf.evaluation.tasks.retrieval: the cross-class retrieval grid under the loss's similarity, its
figure for gray and colour images, and the grid over a family's groups."""

from __future__ import annotations

import numpy as np
import pytest

from abc_tf import methods
from abc_tf.data.family import GroupedImages
from abc_tf.evaluation.tasks import retrieval
from abc_tf.runs.run_dir import embed
from toy_family import CONFIG, IMAGE_SHAPE


def test_retrieval_grid_rows_hold_the_right_classes(tmp_path):
    rng = np.random.default_rng(1)
    labels = np.repeat(np.arange(10), 7)
    embeddings = rng.normal(size=(len(labels), 4))
    grid = retrieval.retrieval_grid(embeddings, labels, range(10), seed=3)
    assert grid.indices.shape == (10, 10)
    # Column c holds an image of digit c; the diagonal holds the queries.
    assert np.all(labels[grid.indices] == np.arange(10)[None, :])
    for row in range(10):
        query = embeddings[grid.indices[row, row]]
        for col in range(10):
            if col != row:  # the retrieved image is the closest of its class
                members = np.flatnonzero(labels == col)
                best = members[np.argmin(np.sum((embeddings[members] - query) ** 2, axis=1))]
                assert grid.indices[row, col] == best
    # The loss's similarities: l2 ranks as l2sq does; the scores are s(query, retrieved).
    l2 = retrieval.retrieval_grid(embeddings, labels, range(10), similarity="l2", seed=3)
    assert np.array_equal(l2.indices, grid.indices)
    distances = np.linalg.norm(embeddings[grid.indices] - embeddings[np.diag(grid.indices)][:, None], axis=-1)
    np.testing.assert_allclose(grid.similarity, -(distances**2), atol=1e-9)
    np.testing.assert_allclose(l2.similarity, -np.sqrt(distances**2 + 1e-9), atol=1e-9)
    images = rng.integers(0, 255, size=(len(labels), 28, 28), dtype=np.uint8)
    retrieval.plot_retrieval_grids(images, [("a", grid), ("b", grid)], str(tmp_path / "grid.png"), ink=True)
    assert (tmp_path / "grid.png").stat().st_size > 1000
    colour = rng.integers(0, 255, size=(len(labels), 12, 16, 3), dtype=np.uint8)
    retrieval.plot_retrieval_grids(
        colour, [("c", grid)], str(tmp_path / "colour.png"), class_names=list("abcdefghij")
    )
    assert (tmp_path / "colour.png").stat().st_size > 1000
    with pytest.raises(ValueError, match=r"no image of class\(es\) \[9\]"):
        retrieval.retrieval_grid(embeddings[labels < 9], labels[labels < 9], range(10))


def test_rows_for_many_queries_match_a_brute_force_search():
    rng = np.random.default_rng(2)
    labels = np.repeat(np.arange(4), 9)
    embeddings = rng.normal(size=(len(labels), 3))
    queries = np.flatnonzero(labels == 2)
    rows, _ = retrieval.nearest_of_each_class(embeddings, labels, range(4), queries, "l2sq", batch_size=4)
    assert rows.shape == (len(queries), 4)
    for query, row in zip(queries, rows):
        for column, index in enumerate(row):
            members = np.flatnonzero(labels == column)
            best = members[np.argmin(np.sum((embeddings[members] - embeddings[query]) ** 2, axis=1))]
            assert index == (query if column == 2 else best)
    # One query's row is retrieval_grid's row of that query.
    grid = retrieval.retrieval_grid(embeddings, labels, range(4), [0, 9, queries[3], 27])
    assert np.array_equal(rows[3], grid.indices[2])


def test_group_retrieval_draws_its_figure_and_finds_each_group_s_nearest(tmp_path):
    rng = np.random.default_rng(0)
    groups = np.repeat(np.arange(12), 10)
    images = rng.integers(0, 255, size=(len(groups), *IMAGE_SHAPE), dtype=np.uint8)
    grouped = GroupedImages(
        images,
        [f"person_{g:02d}" for g in range(12)],
        groups.astype(np.int32),
        [f"{g}/{k}.png" for g, k in zip(groups, range(len(groups)))],
    )
    encoder = methods.get_method("abc").build(CONFIG, IMAGE_SHAPE).encoder
    result = retrieval.group_retrieval(
        [("trained", encoder), ("untrained", encoder)], grouped, "l2sq", str(tmp_path / "groups.png"), seed=1
    )
    assert (tmp_path / "groups.png").stat().st_size > 1000
    shown = result["groups"]
    assert len(shown) == retrieval.GROUPS_SHOWN and result["trained"] == result["untrained"]
    indices = np.array(result["trained"]["indices"])  # rows of the data set
    assert indices.shape == (8, 8)
    assert [grouped.group_names[g] for g in groups[indices[0]]] == shown  # column c: an image of group c
    embeddings = embed(encoder, images)
    query = embeddings[indices[1, 1]]
    candidates = np.flatnonzero(groups == groups[indices[1, 2]])
    distances = np.sum((embeddings[candidates] - query) ** 2, axis=1)
    # The nearest of the candidates drawn (up to IMAGES_PER_GROUP of 10: all of them here).
    assert indices[1, 2] == candidates[np.argmin(distances)]
