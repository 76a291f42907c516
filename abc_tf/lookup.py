"""Exact nearest-neighbour search under the training similarity, by tiles.

Pose lookup (evaluation and the exported ``lookup_pose``) ranks keys exactly as the loss
does (abc_tf.losses.pairwise_similarity), and never holds the whole [queries, keys] matrix:
tiles of about ``MAX_SCORES`` similarities at a time, so memory stays bounded for any
dictionary. :func:`nearest_neighbours` runs eagerly on NumPy arrays; :func:`nearest_keys`
inside a graph (the SavedModel).
"""

from __future__ import annotations

from typing import Iterator

import numpy as np
import tensorflow as tf

from abc_tf import losses

# Similarities held at once by the lookups (float32: 128 MiB), whatever the number of queries
# and keys; tiles span this many queries, so per-tile work on the keys (normalising them, their
# norms) stays a small fraction of the matmul and the total stays linear in the keys.
MAX_SCORES = 2**25
QUERIES_PER_TILE = 256


def similarity_tiles(
    queries: np.ndarray, keys: np.ndarray, similarity: str, max_elements: int = MAX_SCORES
) -> Iterator[tuple[int, int, np.ndarray]]:
    """Training similarity of queries [Q, D] to keys [N, D], one tile at a time.

    Yields ``(query_start, key_start, float32 [q, k])`` over every pair, query chunks outside,
    with q <= QUERIES_PER_TILE and k chosen so that a tile holds about ``max_elements``
    numbers (l1/linf build [q, k, D] differences, so D counts there too). Uses
    abc_tf.losses.pairwise_similarity, so lookup ranks exactly as the loss does.
    """
    queries = np.asarray(queries, np.float32)
    keys = np.asarray(keys, np.float32)
    if queries.ndim != 2 or keys.ndim != 2 or queries.shape[1] != keys.shape[1]:
        raise ValueError(
            f"Expected queries [Q, D] and keys [N, D] of one D, got {queries.shape} and {keys.shape}."
        )
    rows = max(1, min(len(queries), QUERIES_PER_TILE))
    width = keys.shape[1] if similarity in ("l1", "linf") else 1
    columns = max(1, max_elements // (rows * width))
    for query_start in range(0, len(queries), rows):
        query_tensor = tf.constant(queries[query_start : query_start + rows])
        for key_start in range(0, len(keys), columns):
            key_tensor = tf.constant(keys[key_start : key_start + columns])
            scores = losses.pairwise_similarity(query_tensor, key_tensor, similarity).numpy()
            yield query_start, key_start, scores


def similarity_matrix(
    queries: np.ndarray, keys: np.ndarray, similarity: str, max_elements: int = MAX_SCORES
) -> np.ndarray:
    """Training similarity of every query to every key: [Q, D], [N, D] -> float32 [Q, N].

    Holds all Q x N numbers: for a top-1 search use :func:`nearest_neighbours`, which doesn't.
    """
    out = np.empty((len(queries), len(keys)), np.float32)
    for query_start, key_start, scores in similarity_tiles(queries, keys, similarity, max_elements):
        out[query_start : query_start + len(scores), key_start : key_start + scores.shape[1]] = scores
    return out


def keep_best(best: np.ndarray, index: np.ndarray, scores: np.ndarray, ids: np.ndarray) -> None:
    """Running top-1: rows of ``best``/``index`` [q] take the best of ``scores`` [q, k] (key ids
    ``ids`` [k]) where it beats them; ties keep the earlier key, as one argmax over all would."""
    local = np.argmax(scores, axis=1)
    value = scores[np.arange(len(scores)), local]
    better = value > best
    best[better] = value[better]
    index[better] = ids[local[better]]


def nearest_neighbours(
    queries: np.ndarray, keys: np.ndarray, similarity: str, max_elements: int = MAX_SCORES
) -> tuple[np.ndarray, np.ndarray]:
    """Index [Q] of each query's most similar key, and that similarity [Q].

    Exact (brute force) top-1 by tiles: memory ~ max_elements, never Q x N.
    """
    index = np.zeros(len(queries), np.int64)
    best = np.full(len(queries), -np.inf, np.float32)
    for query_start, key_start, scores in similarity_tiles(queries, keys, similarity, max_elements):
        rows = slice(query_start, query_start + len(scores))
        ids = np.arange(key_start, key_start + scores.shape[1])
        keep_best(best[rows], index[rows], scores, ids)
    return index, best


def nearest_keys(
    queries: tf.Tensor, keys: tf.Tensor, similarity: str, max_scores: int, max_rows: int
) -> tuple[tf.Tensor, tf.Tensor]:
    """Exact top-1 in the graph: index [B] int64 of each query's most similar key, and that similarity [B].

    queries [B, D] (B > 0), keys [N, D], L2-normalised already for cosine. Goes by tiles of at
    most ``max_rows`` queries x k keys, k chosen so that a tile holds about ``max_scores``
    numbers (l1/linf build [rows, k, D] differences, so D counts there), with a running best:
    memory stays bounded instead of the whole [B, N] matrix. Ties keep the earlier key, as
    one argmax over all keys does.
    """
    width = int(keys.shape[-1]) if similarity in ("l1", "linf") else 1
    if similarity == "cosine":
        # The keys are normalised once at export; this is losses.pairwise_similarity's cosine.
        queries = tf.math.l2_normalize(queries, axis=-1)
        score = lambda rows, tile: tf.matmul(rows, tile, transpose_b=True)  # noqa: E731
    else:
        score = lambda rows, tile: losses.pairwise_similarity(rows, tile, similarity)  # noqa: E731
    count, size = tf.shape(queries)[0], tf.shape(keys)[0]
    rows = tf.minimum(count, max(1, min(max_rows, max_scores // width)))
    columns = tf.maximum(max_scores // (rows * width), 1)
    chunks = (count + rows - 1) // rows
    # Padded with zero queries to whole chunks; their answers are dropped below.
    padded = tf.pad(queries, [[0, chunks * rows - count], [0, 0]])

    def search(chunk: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        def step(start, best, index):
            scores = score(chunk, keys[start : start + columns])
            value = tf.reduce_max(scores, axis=-1)
            better = value > best  # strictly: on a tie the earlier tile's key stays
            local = tf.argmax(scores, axis=-1) + tf.cast(start, tf.int64)
            return start + columns, tf.where(better, value, best), tf.where(better, local, index)

        initial = (tf.constant(0), tf.fill([rows], -np.inf), tf.zeros([rows], tf.int64))
        # One tile at a time (parallel_iterations=1): parallel iterations would hold several.
        _, best, index = tf.while_loop(lambda start, *_: start < size, step, initial, parallel_iterations=1)
        return index, best

    index, best = tf.map_fn(
        search,
        tf.reshape(padded, [chunks, rows, -1]),
        fn_output_signature=(tf.int64, tf.float32),
        parallel_iterations=1,
    )
    return tf.reshape(index, [-1])[:count], tf.reshape(best, [-1])[:count]
