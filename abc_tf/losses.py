"""Similarities and the ABC loss (docs/PAPERS.md section 1), batched over P pairs of sets.

Shapes: sets of embeddings are ``[P, N, D]`` (P pairs, N points, D dimensions); similarity
matrices are ``[P, N, M]``. All losses return scalars averaged over the P pairs.
Numerical stability: logits are ``similarity / tau`` and only ever pass through softmax or
log-softmax, which subtract their maximum, so tau down to 0.01 is safe.
"""

from __future__ import annotations

import keras
import tensorflow as tf

from abc_tf.config import SIMILARITIES

# Added under the square root of l2 so that its gradient is finite at zero distance.
L2_EPSILON = 1e-9


def _squared_distances(x: tf.Tensor, y: tf.Tensor) -> tf.Tensor:
    """||x_i - y_j||^2 through one matmul: [P, N, D], [P, M, D] -> [P, N, M], never negative."""
    x_norms = tf.reduce_sum(tf.square(x), axis=-1)[..., :, tf.newaxis]
    y_norms = tf.reduce_sum(tf.square(y), axis=-1)[..., tf.newaxis, :]
    cross = tf.matmul(x, y, transpose_b=True)
    # Rounding can make the expansion slightly negative for (near-)equal points.
    return tf.maximum(x_norms + y_norms - 2.0 * cross, 0.0)


# l1 and linf compare coordinates one by one, through a [..., N, M, D] difference tensor. Up to
# this many elements (128 MB in float32) it is built whole; beyond it, in chunks of coordinates
# with a hand-written gradient, so memory stays O(N M) instead of O(N M D) (BENCHMARKS.md,
# "Training cost against set size": sets of 1024 with 16 pairs would otherwise need 4 GB a tensor).
DIFFERENCE_ELEMENTS = 2**25


def pairwise_similarity(x: tf.Tensor, y: tf.Tensor, similarity: str) -> tf.Tensor:
    """Similarity s(x_i, y_j) for all pairs: [..., N, D], [..., M, D] -> [..., N, M].

    l2sq: -||x-y||^2; l2: -sqrt(||x-y||^2 + 1e-9); l1: -sum|x-y|; linf: -max|x-y|;
    cosine: dot product of L2-normalised vectors. l2sq, l2 and cosine use a matmul; l1 and
    linf have no such form and build the [..., N, M, D] differences, in chunks of coordinates
    when that tensor would exceed ``DIFFERENCE_ELEMENTS``.
    """
    if similarity == "l2sq":
        return -_squared_distances(x, y)
    if similarity == "l2":
        return -tf.sqrt(_squared_distances(x, y) + L2_EPSILON)
    if similarity == "cosine":
        return tf.matmul(tf.math.l2_normalize(x, axis=-1), tf.math.l2_normalize(y, axis=-1), transpose_b=True)
    if similarity in ("l1", "linf"):
        chunk = _coordinate_chunk(x, y)
        if chunk is None:
            differences = tf.abs(x[..., :, tf.newaxis, :] - y[..., tf.newaxis, :, :])
            reduce = tf.reduce_sum if similarity == "l1" else tf.reduce_max
            return -reduce(differences, axis=-1)
        return (_chunked_l1 if similarity == "l1" else _chunked_linf)(x, y, chunk)
    raise ValueError(f"Unknown similarity {similarity!r}; choose one of {', '.join(SIMILARITIES)}.")


def _coordinate_chunk(x: tf.Tensor, y: tf.Tensor) -> int | None:
    """Coordinates per chunk for l1/linf (a divisor of D), or None to build the whole difference
    tensor (also when the shapes are not known when the graph is traced)."""
    if not (x.shape.is_fully_defined() and y.shape.is_fully_defined()):
        return None
    dims = x.shape[-1]
    pairs_and_points = x.shape.num_elements() // dims * y.shape[-2]  # [..., N] x M
    if pairs_and_points * dims <= DIFFERENCE_ELEMENTS:
        return None
    most = max(1, DIFFERENCE_ELEMENTS // pairs_and_points)
    return max(size for size in range(1, min(most, dims) + 1) if dims % size == 0)


def _over_chunks(x: tf.Tensor, y: tf.Tensor, chunk: int, body, initial):
    """Runs ``state = body(state, start, differences)`` over the coordinate chunks one after
    another (parallel_iterations=1), so that only one [..., N, M, chunk] tensor lives at a time."""

    def step(start, state):
        differences = (
            x[..., :, tf.newaxis, start : start + chunk] - y[..., tf.newaxis, :, start : start + chunk]
        )
        return start + chunk, body(state, start, differences)

    _, state = tf.while_loop(
        lambda start, _: start < x.shape[-1], step, (tf.constant(0), initial), parallel_iterations=1
    )
    return state


def _coordinate_gradients(x, y, chunk, upstream, weights):
    """Gradients of -sum_d w_ijd |x_id - y_jd| for upstream [..., N, M], chunk by chunk;
    ``weights(start, differences)`` gives w for the chunk (1 for l1, the argmax mask for linf)."""
    chunks = x.shape[-1] // chunk

    def body(state, start, differences):
        grads_x, grads_y = state
        signed = tf.sign(differences) * weights(start, differences)
        index = start // chunk
        return (
            grads_x.write(index, -tf.einsum("...nmc,...nm->...nc", signed, upstream)),
            grads_y.write(index, tf.einsum("...nmc,...nm->...mc", signed, upstream)),
        )

    arrays = (tf.TensorArray(x.dtype, size=chunks), tf.TensorArray(y.dtype, size=chunks))
    grads_x, grads_y = _over_chunks(x, y, chunk, body, arrays)

    def join(array, like):  # [chunks, ..., N, chunk] -> [..., N, chunks * chunk]
        stacked = array.stack()
        rank = like.shape.rank
        return tf.reshape(tf.transpose(stacked, [*range(1, rank), 0, rank]), like.shape)

    return join(grads_x, x), join(grads_y, y)


def _chunked_l1(x: tf.Tensor, y: tf.Tensor, chunk: int) -> tf.Tensor:
    @tf.custom_gradient
    def l1(x, y):
        shape = x.shape[:-1] + y.shape[-2:-1]
        total = _over_chunks(
            x,
            y,
            chunk,
            lambda total, start, differences: total + tf.reduce_sum(tf.abs(differences), -1),
            tf.zeros(shape, x.dtype),
        )

        def gradient(upstream):
            return _coordinate_gradients(x, y, chunk, upstream, lambda start, differences: 1.0)

        return -total, gradient

    return l1(x, y)


def _chunked_linf(x: tf.Tensor, y: tf.Tensor, chunk: int) -> tf.Tensor:
    @tf.custom_gradient
    def linf(x, y):
        shape = x.shape[:-1] + y.shape[-2:-1]

        def body(state, start, differences):
            # Running max of |x_d - y_d| and the coordinate attaining it; ties keep the earlier
            # coordinate, as argmax does within a chunk.
            largest, coordinate = state
            magnitudes = tf.abs(differences)
            chunk_largest = tf.reduce_max(magnitudes, axis=-1)
            larger = chunk_largest > largest
            chunk_coordinate = tf.argmax(magnitudes, axis=-1, output_type=tf.int32) + start
            return tf.where(larger, chunk_largest, largest), tf.where(larger, chunk_coordinate, coordinate)

        initial = (tf.fill(shape, tf.constant(-1.0, x.dtype)), tf.zeros(shape, tf.int32))
        largest, coordinate = _over_chunks(x, y, chunk, body, initial)

        def gradient(upstream):
            # The max passes its gradient to the coordinate that attains it.
            def weights(start, differences):
                return tf.one_hot(coordinate - start, chunk, dtype=differences.dtype)

            return _coordinate_gradients(x, y, chunk, upstream, weights)

        return -largest, gradient

    return linf(x, y)


def cycle_loss(
    start: tf.Tensor, through: tf.Tensor, target: tf.Tensor, similarity: str, temperature: float
) -> tuple[tf.Tensor, tf.Tensor]:
    """One direction of the cycle, L(start -> through -> target).

    start, target: [P, N, D] (two views of the same N inputs, or the same tensor);
    through: [P, M, D]. For each start point, its soft nearest neighbour in ``through`` is
    classified against the N target points, with the correct class its own index.
    Returns (mean cross entropy, cycle accuracy), both scalars over P * N points.
    """
    alpha = tf.nn.softmax(pairwise_similarity(start, through, similarity) / temperature, axis=-1)  # [P, N, M]
    soft_neighbours = tf.matmul(alpha, through)  # [P, N, D]
    logits = pairwise_similarity(soft_neighbours, target, similarity) / temperature  # [P, N, N]
    log_probabilities = tf.nn.log_softmax(logits, axis=-1)
    cross_entropy = -tf.linalg.diag_part(log_probabilities)  # [P, N]
    own_index = tf.range(tf.shape(logits)[-1], dtype=tf.int64)
    correct = tf.cast(tf.equal(tf.argmax(logits, axis=-1), own_index), tf.float32)
    return tf.reduce_mean(cross_entropy), tf.reduce_mean(correct)


def abc_loss(
    set_a: tf.Tensor,
    set_b: tf.Tensor,
    similarity: str = "l2sq",
    temperature: float = 1.0,
    set_a_view2: tf.Tensor | None = None,
    set_b_view2: tf.Tensor | None = None,
) -> tuple[tf.Tensor, tf.Tensor]:
    """The symmetric ABC loss L(A->B) + L(B->A) and the mean cycle accuracy of both directions.

    set_a: [P, N, D], set_b: [P, M, D]. With double augmentation, ``set_a``/``set_b`` are the
    first views and ``set_*_view2`` the second: the cycle starts at view 1, passes through the
    other set's view 1 and must return to its own view 2 (docs/PAPERS.md section 1). Leaving the
    second views out, or passing the first views again, gives the plain loss.
    """
    target_a = set_a if set_a_view2 is None else set_a_view2
    target_b = set_b if set_b_view2 is None else set_b_view2
    loss_ab, accuracy_ab = cycle_loss(set_a, set_b, target_a, similarity, temperature)
    loss_ba, accuracy_ba = cycle_loss(set_b, set_a, target_b, similarity, temperature)
    return loss_ab + loss_ba, 0.5 * (accuracy_ab + accuracy_ba)


def contrastive_loss(
    view1: tf.Tensor, view2: tf.Tensor, similarity: str = "l2sq", temperature: float = 1.0
) -> tuple[tf.Tensor, tf.Tensor]:
    """Two-view baseline: logits s(view1_i, view2_k)/tau, cross entropy with target i.

    view1, view2: [P, N, D]. Returns (mean cross entropy, fraction of i whose best match is i).
    """
    logits = pairwise_similarity(view1, view2, similarity) / temperature
    cross_entropy = -tf.linalg.diag_part(tf.nn.log_softmax(logits, axis=-1))
    own_index = tf.range(tf.shape(logits)[-1], dtype=tf.int64)
    correct = tf.cast(tf.equal(tf.argmax(logits, axis=-1), own_index), tf.float32)
    return tf.reduce_mean(cross_entropy), tf.reduce_mean(correct)


@keras.saving.register_keras_serializable(package="abc_tf")
class ABCLoss(keras.losses.Loss):
    """:func:`abc_loss` as a Keras loss, for ``compile(loss=ABCLoss(set_size))`` of a plain model
    of images [B, H, W, C] -> embeddings [B, D].

    ``y_pred`` [2 * P * set_size, D]: P sets A, then their P sets B, each set's rows consecutive, as
    ``abc_tf.stacked_sets`` lays out a set batch. ``y_true`` is ignored: set membership supervises.
    """

    def __init__(self, set_size: int, similarity: str = "l2sq", temperature: float = 1.0, **kwargs):
        super().__init__(**{"name": "abc_loss", **kwargs})
        self.set_size, self.similarity, self.temperature = int(set_size), similarity, float(temperature)

    def call(self, y_true, y_pred):
        del y_true
        sets = tf.reshape(tf.cast(y_pred, tf.float32), [2, -1, self.set_size, tf.shape(y_pred)[-1]])
        return abc_loss(sets[0], sets[1], self.similarity, self.temperature)[0]

    def get_config(self) -> dict:
        names = ("set_size", "similarity", "temperature")
        return {**super().get_config(), **{name: getattr(self, name) for name in names}}
