"""Library helpers behind the scaling benchmarks: chunked pose lookup and wide distinct draws."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest
import tensorflow as tf

from abc_tf import geometry, losses
from abc_tf.data import groups
from abc_tf import lookup
from abc_tf.evaluation import pose_accuracy

RNG = np.random.default_rng(0)


@pytest.mark.parametrize("similarity", ["cosine", "l2sq", "l1"])
def test_tiled_nearest_neighbours_agree_with_the_full_matrix(similarity):
    queries, keys = RNG.normal(size=(37, 6)), RNG.normal(size=(101, 6))
    full = losses.pairwise_similarity(tf.constant(queries, tf.float32), tf.constant(keys, tf.float32), similarity).numpy()
    # Tiles of 300 numbers: 37 queries by 8 keys (by 1 key for l1, whose differences count D).
    index, score = lookup.nearest_neighbours(queries, keys, similarity, max_elements=300)
    np.testing.assert_array_equal(index, np.argmax(full, axis=1))
    np.testing.assert_allclose(score, full.max(axis=1), rtol=1e-5, atol=1e-5)  # matmul blocking differs by shape
    tiles = list(lookup.similarity_tiles(queries, keys, similarity, max_elements=300))
    columns = 1 if similarity == "l1" else 8
    assert [(q, k) for q, k, _ in tiles] == [(0, k) for k in range(0, 101, columns)]
    assert all(scores.shape == (37, min(columns, 101 - k)) for _, k, scores in tiles)
    np.testing.assert_allclose(lookup.similarity_matrix(queries, keys, similarity), full, rtol=1e-5, atol=1e-5)


def test_tiled_lookup_evaluation_matches_one_matrix_for_all_queries(monkeypatch):
    monkeypatch.setattr(lookup, "QUERIES_PER_TILE", 7)  # 5 query chunks by 4 key blocks of 250 // 7 = 35
    queries, pool = RNG.normal(size=(30, 8)), RNG.normal(size=(120, 8))
    query_rotations = geometry.euler_to_matrix(RNG.uniform(-1, 1, size=(30, 3)))
    pool_rotations = geometry.euler_to_matrix(RNG.uniform(-1, 1, size=(120, 3)))
    chunked = pose_accuracy.lookup_evaluation(
        queries, query_rotations, pool, pool_rotations, dictionary_size=50, repeats=4, seed=3, max_elements=250
    )
    # Reference: the whole [Q, P] matrix at once, dictionaries drawn by the same seeded generator.
    scores = losses.pairwise_similarity(tf.constant(queries, tf.float32), tf.constant(pool, tf.float32), "cosine").numpy()
    rng = np.random.default_rng(3)
    for repeat in range(4):
        members = rng.choice(120, size=50, replace=False)  # the unchunked code, as it was
        neighbour = members[np.argmax(scores[:, members], axis=1)]
        expected = pose_accuracy.error_metrics(pool_rotations[neighbour], query_rotations)
        for name, value in expected.items():
            assert chunked.per_dictionary[name][repeat] == pytest.approx(value)


def test_sample_distinct_from_a_huge_population_stays_small():
    # count^2 > population (the birthday regime) with a population far above the key cap.
    population = np.array([groups._MAX_KEY_WIDTH * 64, 5000])
    tracemalloc.start()
    draws = groups.sample_distinct(np.random.default_rng(0), population, 3000)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 10e6  # ranking one key per value would take ~1 GB here
    assert draws.shape == (2, 3000)
    for row, size in zip(draws, population):
        assert np.unique(row).size == 3000 and row.min() >= 0 and row.max() < size
    # Uniform over the range: the mean of 3000 draws is near the middle.
    assert abs(draws[0].mean() / population[0] - 0.5) < 0.03
