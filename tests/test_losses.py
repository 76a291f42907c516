"""The ABC loss against a NumPy reference written from docs/PAPERS.md section 1."""

import itertools

import numpy as np
import pytest
import tensorflow as tf

from abc_tf import losses
from tolerance_helpers import rounding_rtol

SIMILARITIES = ("l2sq", "l2", "l1", "linf", "cosine")


def np_similarity(x, y, kind):
    """x [N, D], y [M, D] -> [N, M], straight from the definitions."""
    diff = x[:, None, :] - y[None, :, :]
    if kind == "l2sq":
        return -np.sum(diff**2, -1)
    if kind == "l2":
        return -np.sqrt(np.sum(diff**2, -1) + 1e-9)
    if kind == "l1":
        return -np.sum(np.abs(diff), -1)
    if kind == "linf":
        return -np.max(np.abs(diff), -1)
    xn = x / np.linalg.norm(x, axis=-1, keepdims=True)
    yn = y / np.linalg.norm(y, axis=-1, keepdims=True)
    return xn @ yn.T


def np_log_softmax(z):
    z = z - z.max(-1, keepdims=True)
    return z - np.log(np.exp(z).sum(-1, keepdims=True))


def np_cycle(start, through, target, kind, tau):
    """Returns per-point losses and correctness of one direction for one pair of sets."""
    alpha = np.exp(np_log_softmax(np_similarity(start, through, kind) / tau))
    soft = alpha @ through
    logits = np_similarity(soft, target, kind) / tau
    n = len(start)
    losses_i = -np_log_softmax(logits)[np.arange(n), np.arange(n)]
    correct = (np.argmax(logits, -1) == np.arange(n)).astype(float)
    return losses_i, correct


def np_abc(a, b, kind, tau, a2=None, b2=None):
    """a [P, N, D], b [P, M, D]: mean over pairs of L(A->B) + L(B->A), and mean cycle accuracy."""
    a2 = a if a2 is None else a2
    b2 = b if b2 is None else b2
    total, accuracy = [], []
    for p in range(len(a)):
        l_ab, c_ab = np_cycle(a[p], b[p], a2[p], kind, tau)
        l_ba, c_ba = np_cycle(b[p], a[p], b2[p], kind, tau)
        total.append(l_ab.mean() + l_ba.mean())
        accuracy.append(0.5 * (c_ab.mean() + c_ba.mean()))
    return np.mean(total), np.mean(accuracy)


@pytest.mark.parametrize("kind", SIMILARITIES)
def test_pairwise_similarity_matches_definition(kind):
    rng = np.random.default_rng(1)
    x, y = rng.normal(size=(7, 5)), rng.normal(size=(4, 5))
    got = losses.pairwise_similarity(tf.constant(x[None], tf.float32), tf.constant(y[None], tf.float32), kind)
    # float32 against float64: the inputs' rounding, then D = 5 products summed and two norms (l2sq
    # as |x|^2 + |y|^2 - 2 x.y) of terms up to (|x| + |y|)^2.
    scale = (np.linalg.norm(x, axis=1).max() + np.linalg.norm(y, axis=1).max()) ** 2
    tolerance = rounding_rtol(5 + 3)
    np.testing.assert_allclose(
        got.numpy()[0], np_similarity(x, y, kind), rtol=tolerance, atol=tolerance * scale
    )


@pytest.mark.parametrize(
    "kind,tau,shape",
    list(itertools.product(SIMILARITIES, (0.05, 1.0), ((1, 5, 5, 3), (3, 8, 6, 4), (2, 4, 9, 16)))),
)
def test_abc_loss_matches_numpy_reference(kind, tau, shape):
    p, n, m, d = shape
    # A seed from the case itself: hash() of strings is salted per process, so it is not used.
    rng = np.random.default_rng([losses.SIMILARITIES.index(kind), int(tau * 100), *shape])
    a = rng.normal(size=(p, n, d)).astype(np.float32)
    b = rng.normal(size=(p, m, d)).astype(np.float32)
    loss, accuracy = losses.abc_loss(tf.constant(a), tf.constant(b), kind, tau)
    want_loss, want_accuracy = np_abc(a.astype(np.float64), b.astype(np.float64), kind, tau)
    np.testing.assert_allclose(loss.numpy(), want_loss, rtol=2e-3, atol=2e-3)
    # A mean of 0s and 1s: the sums are exact, the divisions round a value <= 1 a few times.
    np.testing.assert_allclose(accuracy.numpy(), want_accuracy, atol=1e-6)


@pytest.mark.parametrize("kind", SIMILARITIES)
def test_double_augmentation_matches_numpy_reference(kind):
    rng = np.random.default_rng(3)
    a, a2 = rng.normal(size=(2, 2, 6, 4))
    b, b2 = rng.normal(size=(2, 2, 5, 4))
    got, _ = losses.abc_loss(
        *(tf.constant(v, tf.float32) for v in (a, b)),
        kind,
        0.5,
        tf.constant(a2, tf.float32),
        tf.constant(b2, tf.float32),
    )
    want, _ = np_abc(a, b, kind, 0.5, a2, b2)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("kind", SIMILARITIES)
def test_double_augmentation_with_equal_views_is_the_plain_loss(kind):
    rng = np.random.default_rng(4)
    a = tf.constant(rng.normal(size=(3, 6, 4)), tf.float32)
    b = tf.constant(rng.normal(size=(3, 7, 4)), tf.float32)
    plain, plain_accuracy = losses.abc_loss(a, b, kind, 0.3)
    double, double_accuracy = losses.abc_loss(a, b, kind, 0.3, a, b)
    np.testing.assert_allclose(
        double.numpy(), plain.numpy(), rtol=1e-6
    )  # the same ops on the same tensors: equal
    assert double_accuracy.numpy() == plain_accuracy.numpy()


@pytest.mark.parametrize("kind", SIMILARITIES)
def test_identical_well_separated_sets_give_zero_loss(kind):
    # Points far apart (relative to tau) on distinct directions: every cycle returns home.
    points = 10.0 * np.eye(8, dtype=np.float32)[None]
    loss, accuracy = losses.abc_loss(tf.constant(points), tf.constant(points), kind, 0.05)
    assert loss.numpy() < 1e-3
    assert accuracy.numpy() == 1.0


@pytest.mark.parametrize("kind", SIMILARITIES)
def test_loss_is_invariant_to_permuting_set_b(kind):
    rng = np.random.default_rng(5)
    a = rng.normal(size=(2, 6, 3)).astype(np.float32)
    b = rng.normal(size=(2, 9, 3)).astype(np.float32)
    permuted = b[:, rng.permutation(9)]
    loss, accuracy = losses.abc_loss(tf.constant(a), tf.constant(b), kind, 0.2)
    loss_p, accuracy_p = losses.abc_loss(tf.constant(a), tf.constant(permuted), kind, 0.2)
    # Permuting B reorders the 9-term sums over B (the softmax's denominator, the soft neighbour),
    # whose rounding reaches the logits through a squared distance of points |x| + |y| < 5, over
    # tau = 0.2; the loss (about 2 log 6) moves by at most as much as a logit.
    np.testing.assert_allclose(loss.numpy(), loss_p.numpy(), rtol=rounding_rtol(2 * 9, condition=5**2 / 0.2))
    np.testing.assert_allclose(accuracy.numpy(), accuracy_p.numpy())


@pytest.mark.parametrize("kind", SIMILARITIES)
def test_gradients_are_finite_at_small_temperature(kind):
    rng = np.random.default_rng(6)
    a = tf.Variable(rng.normal(size=(2, 16, 8)).astype(np.float32) * 5.0)
    b = tf.Variable(rng.normal(size=(2, 16, 8)).astype(np.float32) * 5.0)
    with tf.GradientTape() as tape:
        # Include identical points: l2's sqrt and the squared-distance clamp must stay finite.
        loss, _ = losses.abc_loss(a, tf.concat([a[:, :4], b[:, 4:]], axis=1), kind, 0.01)
    gradients = tape.gradient(loss, [a, b])
    assert np.isfinite(loss.numpy())
    for gradient in gradients:
        assert np.all(np.isfinite(gradient.numpy()))


def test_contrastive_loss_matches_numpy_reference():
    rng = np.random.default_rng(7)
    v1, v2 = rng.normal(size=(2, 3, 10, 4))
    got, accuracy = losses.contrastive_loss(
        tf.constant(v1, tf.float32), tf.constant(v2, tf.float32), "l2sq", 0.5
    )
    want, want_accuracy = [], []
    for p in range(3):
        logits = np_similarity(v1[p], v2[p], "l2sq") / 0.5
        want.append(-np.mean(np.diag(np_log_softmax(logits))))
        want_accuracy.append(np.mean(np.argmax(logits, -1) == np.arange(10)))
    # float32 against float64: l2sq of D = 4 (three roundings more for the inputs and the norms)
    # over terms up to (|v1| + |v2|)^2, divided by tau = 0.5; log-softmax moves by at most twice a
    # logit's error.
    scale = (np.linalg.norm(v1, axis=-1).max() + np.linalg.norm(v2, axis=-1).max()) ** 2
    np.testing.assert_allclose(
        got.numpy(), np.mean(want), rtol=0, atol=2 * rounding_rtol(4 + 3) * scale / 0.5
    )
    np.testing.assert_allclose(
        accuracy.numpy(), np.mean(want_accuracy), atol=1e-6
    )  # a mean of 0s and 1s, as above


def test_unknown_similarity_is_a_clear_error():
    with pytest.raises(ValueError, match="Unknown similarity 'dot'"):
        losses.pairwise_similarity(tf.zeros((1, 2, 3)), tf.zeros((1, 2, 3)), "dot")


def test_dynamic_shapes_in_a_traced_function():
    spec = tf.TensorSpec([None, None, None], tf.float32)

    @tf.function(input_signature=[spec, spec])
    def traced(a, b):
        return losses.abc_loss(a, b, "l2sq", 1.0)

    rng = np.random.default_rng(9)
    for shape_a, shape_b in (((1, 4, 3), (1, 6, 3)), ((3, 5, 8), (3, 2, 8))):
        a, b = rng.normal(size=shape_a).astype(np.float32), rng.normal(size=shape_b).astype(np.float32)
        got, _ = traced(a, b)
        # Two float32 evaluations (NumPy's and the graph's): two squared distances of D <= 8 with
        # their norms, a softmax and a soft neighbour over M <= 6, a log-softmax over N <= 5, means:
        # about 40 roundings of terms up to (|a| + |b|)^2 < 64 against a loss of about 2.
        np.testing.assert_allclose(
            got.numpy(), np_abc(a, b, "l2sq", 1.0)[0], rtol=rounding_rtol(40, condition=64)
        )


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["l1", "linf"])
def test_chunked_coordinate_similarities_match_the_whole_tensor(kind, monkeypatch):
    # Large sets build l1/linf in chunks of coordinates with a hand-written gradient; values and
    # gradients must be those of the [N, M, D] tensor, eagerly and traced.
    rng = np.random.default_rng(10)
    x = tf.constant(rng.normal(size=(3, 7, 12)), tf.float32)
    y = tf.constant(rng.normal(size=(3, 5, 12)), tf.float32)

    def value_and_gradients():
        with tf.GradientTape() as tape:
            tape.watch([x, y])
            similarity = losses.pairwise_similarity(x, y, kind)
            weighted = tf.reduce_sum(similarity * tf.cos(similarity))
        return [similarity, *tape.gradient(weighted, [x, y])]

    whole = value_and_gradients()
    monkeypatch.setattr(losses, "DIFFERENCE_ELEMENTS", 3 * 7 * 5 * 3)  # chunks of 3 of the 12 coordinates
    assert losses._coordinate_chunk(x, y) == 3
    # Chunks regroup the sum of 12 terms of one sign: s within rounding_rtol(12) |s|. The weight's
    # gradient cos s - s sin s moves by (2 + |s|) times that, and each point's gradient sums <= 7
    # of them (and rounds 7 times more).
    size = np.abs(whole[0].numpy()).max()
    value_rtol = rounding_rtol(12)
    gradient_atol = 7 * (2 + size) * value_rtol * size + rounding_rtol(7) * 7 * (1 + size)
    for chunked in (value_and_gradients(), tf.function(value_and_gradients)()):
        np.testing.assert_allclose(chunked[0].numpy(), whole[0].numpy(), rtol=value_rtol)
        for got, want in zip(chunked[1:], whole[1:]):
            np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=0, atol=gradient_atol)


def test_coordinate_chunks_bound_the_difference_tensor():
    x, y = tf.zeros([16, 1024, 64]), tf.zeros([16, 1024, 64])
    chunk = losses._coordinate_chunk(x, y)
    assert 16 * 1024 * 1024 * chunk <= losses.DIFFERENCE_ELEMENTS
    assert (
        losses._coordinate_chunk(tf.zeros([4, 32, 64]), tf.zeros([4, 32, 64])) is None
    )  # small: whole tensor
