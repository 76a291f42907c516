"""PMP's loss terms and their schedule (Fumero et al., ICML 2021; docs/PAPERS.md section P1).

Pure functions of the subspace codes, each tested against NumPy in tests/test_pmp.py.
The comment under the imports defines each term and the schedule, and marks [code] and [ours].
PMPModel (abc_tf/methods/pmp/model.py) weighs them into the loss.
"""

from __future__ import annotations

import tensorflow as tf

# Where this follows the authors' code [code] rather than the supplement, or neither [ours]:
# - pairs change exactly one factor, always to another value [ours]; their dataset.py (k = -1)
#   redraws 1 to 5 factors uniformly, so a factor may keep its value.
# - L_rec decodes Shapes3D linearly; L_spar is eq. 1's L1 norm divided by d [code].
# - L_dis picks the changed subspace i* by D normalised by each subspace's mean distance over the
#   batch's 2B codes, self pairs included, but the loss reads the raw D [code]; their constant
#   10 x 0.05 for each other entry (0.45 at k = 10, no gradient) is left out.
# - L_cons draws 2B of the k x B mixes anew each step, gradients through both sides, and costs a
#   decoder and an encoder pass, so runs only once b2 > 0.01 [code].
# - Schedule: reconstruction alone while t <= 0.25 (the supplement: 20%); b3 = 1 - b1 [code] (the
#   supplement: 1 - b2). t = step / T moves every step [ours]; theirs is epoch / epochs, in stairs.
#
# The authors' constants [code].
MARGIN, MARGIN_WEIGHT = 0.05, 10.0  # L_dis: the changed subspace keeps D >= 0.05
USAGE_SHARPNESS, USAGE_SCALE = 1000.0, 100.0  # L_reg: softmax(1000 D), times 100
RAMP_RATE, DISTANCE_CENTRE, CONSISTENCY_CENTRE = 25.0, 0.4, 0.5
CONSISTENCY_FROM = 1e-2  # L_cons is computed once b2 exceeds this


def loss_weights(step, total_steps: int, warmup: float) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
    """b1, b2 and b3, float32, at optimizer step ``step`` of ``total_steps``. ``step`` may be a
    tensor.
    """
    t = tf.cast(step, tf.float32) / float(max(int(total_steps), 1))
    active = tf.cast(t > warmup, tf.float32)
    ramp1 = tf.minimum(tf.exp(RAMP_RATE * (t - DISTANCE_CENTRE)), 1.0)
    ramp2 = tf.minimum(tf.exp(RAMP_RATE * (t - CONSISTENCY_CENTRE)), 1.0)
    return active * ramp1, active * ramp2, active * (1.0 - ramp1)


def reconstruction_loss(reconstructions: tf.Tensor, images: tf.Tensor) -> tf.Tensor:
    return tf.reduce_mean(tf.square(tf.cast(reconstructions, tf.float32) - images))


def sparsity_loss(codes: tf.Tensor) -> tf.Tensor:
    """codes [N, k, d] -> mean over images and coordinates of sum_i |s_i * sum_{j != i} s_j|."""
    others = tf.reduce_sum(codes, axis=1, keepdims=True) - codes
    return tf.reduce_mean(tf.reduce_sum(tf.abs(codes * others), axis=1))


def pair_distances(codes1: tf.Tensor, codes2: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
    """codes [B, k, d] of x1 and x2 -> D [B, k] and the one-hot [B, k] of the changed subspace.

    D holds the squared distances per subspace. The changed subspace is the one whose D, divided
    by its mean distance in the batch, is largest.
    """
    squared = tf.reduce_sum(tf.square(codes1 - codes2), axis=-1)
    every = tf.stop_gradient(tf.transpose(tf.concat([codes1, codes2], axis=0), [1, 0, 2]))  # [k, 2B, d]
    norms = tf.reduce_sum(tf.square(every), axis=-1)
    gram = tf.matmul(every, every, transpose_b=True)
    euclidean = tf.sqrt(tf.maximum(norms[:, :, None] + norms[:, None, :] - 2.0 * gram, 0.0))
    scale = tf.reduce_mean(euclidean, axis=[1, 2]) + 1e-8  # [k]
    changed = tf.one_hot(
        tf.argmax(tf.stop_gradient(squared) / scale, axis=1), tf.shape(codes1)[1], dtype=tf.float32
    )
    return squared, changed


def distance_loss(squared: tf.Tensor, changed: tf.Tensor) -> tf.Tensor:
    """mean over [B, k] of (1 - M) D + 10 M relu(0.05 - D)."""
    return tf.reduce_mean((1.0 - changed) * squared + MARGIN_WEIGHT * changed * tf.nn.relu(MARGIN - squared))


def usage_loss(squared: tf.Tensor) -> tf.Tensor:
    """100 * mean_i (1/k - mean_b softmax(1000 D)[b, i])^2."""
    selection = tf.nn.softmax(USAGE_SHARPNESS * squared, axis=1)
    k = tf.cast(tf.shape(squared)[1], tf.float32)
    return USAGE_SCALE * tf.reduce_mean(tf.square(1.0 / k - tf.reduce_mean(selection, axis=0)))


def mix_codes(codes1: tf.Tensor, codes2: tf.Tensor, mixes: tf.Tensor) -> tf.Tensor:
    """The mixed codes [M, k, d]. Mix m = i * B + b takes subspace i from x1_b and the others from
    x2_b.
    """
    batch, k = tf.shape(codes1)[0], tf.shape(codes1)[1]
    pair, subspace = mixes % batch, mixes // batch
    take_first = tf.one_hot(subspace, k, dtype=codes1.dtype)[:, :, None]
    return take_first * tf.gather(codes1, pair) + (1.0 - take_first) * tf.gather(codes2, pair)


def consistency_loss(mixed: tf.Tensor, recode) -> tf.Tensor:
    """Of mixed codes [M, k, d]. ``recode`` maps z [M, d] to the codes of the decoded images [M, k,
    d].
    """
    return tf.reduce_mean(tf.square(tf.cast(recode(tf.reduce_sum(mixed, axis=1)), tf.float32) - mixed))


def draw_mixes(batch: tf.Tensor, k: int, seed: tf.Tensor) -> tf.Tensor:
    """2B distinct mix indices in [0, k B), int32 [M], drawn uniformly from a stateless seed."""
    count = tf.minimum(2 * batch, k * batch)
    keys = tf.random.stateless_uniform(tf.reshape(k * batch, [1]), seed=seed)
    return tf.argsort(keys)[:count]
