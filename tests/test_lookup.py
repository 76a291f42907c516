"""Exact nearest neighbours under the training similarity, by tiles (abc_tf.lookup): the NumPy
search and the in-graph ``nearest_keys`` agree with one search over the whole matrix, for
any tiling, and rank as the loss does."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from abc_tf import losses, lookup
from tolerance_helpers import rounding_rtol


@pytest.mark.parametrize("similarity", ["cosine", "l2sq", "l1"])
def test_tiled_nearest_neighbours_agree_with_the_full_matrix(similarity):
    rng = np.random.default_rng(0)
    queries, keys = rng.normal(size=(37, 6)), rng.normal(size=(101, 6))
    full = losses.pairwise_similarity(
        tf.constant(queries, tf.float32), tf.constant(keys, tf.float32), similarity
    ).numpy()
    # Tiles of 300 numbers: 37 queries by 8 keys (by 1 key for l1, whose differences count D).
    index, score = lookup.nearest_neighbours(queries, keys, similarity, max_elements=300)
    np.testing.assert_array_equal(index, np.argmax(full, axis=1))
    # Tiles of other shapes take other matmul blockings: D = 6 products, the norms and the inputs'
    # rounding (l2sq: |q|^2 + |k|^2 - 2 q.k) on terms up to (|q| + |k|)^2.
    tolerance = (
        rounding_rtol(6 + 3)
        * (np.linalg.norm(queries, axis=1).max() + np.linalg.norm(keys, axis=1).max()) ** 2
    )
    np.testing.assert_allclose(score, full.max(axis=1), rtol=0, atol=tolerance)
    tiles = list(lookup.similarity_tiles(queries, keys, similarity, max_elements=300))
    columns = 1 if similarity == "l1" else 8
    assert [(q, k) for q, k, _ in tiles] == [(0, k) for k in range(0, 101, columns)]
    assert all(scores.shape == (37, min(columns, 101 - k)) for _, k, scores in tiles)
    np.testing.assert_allclose(
        lookup.similarity_matrix(queries, keys, similarity), full, rtol=0, atol=tolerance
    )


def test_nearest_neighbour_ranks_by_the_training_similarity():
    keys = np.array([[1.0, 0.0], [10.0, 1.0]])
    query = np.array([[2.0, 0.2]])
    # Cosine prefers the second key's direction; squared distance prefers the first key.
    assert lookup.nearest_neighbours(query, keys, "cosine")[0][0] == 1
    assert lookup.nearest_neighbours(query, keys, "l2sq")[0][0] == 0
    index, score = lookup.nearest_neighbours(query, keys, "l1")
    assert index[0] == 0 and np.isclose(score[0], -1.2)


def test_ties_keep_the_earlier_key_and_shapes_are_checked():
    keys = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0], [0.0, 1.0]])
    queries = np.array([[1.0, 0.0], [0.0, 2.0]])
    for max_elements in (1, 2, 100):  # one key per tile, two, all at once
        index, _ = lookup.nearest_neighbours(queries, keys, "cosine", max_elements=max_elements)
        np.testing.assert_array_equal(index, [0, 1])
    with pytest.raises(ValueError, match="Expected queries \\[Q, D\\] and keys \\[N, D\\] of one D"):
        lookup.nearest_neighbours(queries, np.zeros((3, 5)), "l2sq")


@pytest.mark.parametrize("similarity", ["cosine", "l2sq", "l1"])
def test_nearest_keys_in_the_graph_equals_one_search_over_all_keys(similarity):
    rng = np.random.default_rng(5)
    keys = rng.normal(size=(37, 8)).astype(np.float32)
    # As the SavedModel calls it: keys normalised once for cosine, any number of queries.
    stored = tf.math.l2_normalize(keys, axis=-1) if similarity == "cosine" else tf.constant(keys)

    # 16 similarities at a time (l1: 16 / 8 coordinates): several query chunks and key tiles,
    # the last tile partial (37 keys), and a padded last chunk of queries.
    @tf.function(input_signature=[tf.TensorSpec([None, 8], tf.float32)])
    def search(queries):
        return lookup.nearest_keys(
            queries, stored, similarity, max_scores=16, max_rows=lookup.QUERIES_PER_TILE
        )

    for batch in (1, 5, 20):
        queries = rng.random((batch, 8), dtype=np.float32)
        scores = losses.pairwise_similarity(tf.constant(queries), tf.constant(keys), similarity).numpy()
        want = np.argmax(scores, axis=1)
        index, best = search(queries)
        np.testing.assert_array_equal(index, want)
        # Other tiles, other blockings (and the keys normalised once for cosine): D = 8 products and
        # the norms, on terms up to (|q| + |k|)^2.
        size = (np.linalg.norm(queries, axis=1).max() + np.linalg.norm(keys, axis=1).max()) ** 2
        np.testing.assert_allclose(
            best, scores[np.arange(batch), want], rtol=0, atol=rounding_rtol(8 + 3) * size
        )
