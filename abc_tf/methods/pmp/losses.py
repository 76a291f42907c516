"""PMP's loss terms and their schedule (Fumero et al., ICML 2021; docs/PAPERS.md section P1).

Pure functions of the subspace codes, each tested against NumPy in tests/test_pmp.py.
The comment under the imports defines each term and the schedule, and marks [code] and [ours].
PMPModel (abc_tf/methods/pmp/model.py) weighs them into the loss.
"""

from __future__ import annotations

import tensorflow as tf

# Pairs: the "pairs" format changes exactly one factor, always to another value [ours]. The
# authors' dataset.py with their notebook's k = -1 changes one factor in about half the pairs.
# The others change 1 to (factors - 1), 1 to 5 on Shapes3D. Each is redrawn uniformly, so it may
# keep its old value.
#
# The terms, for B pairs with codes s [2B, k, d] of the 2B images, and
# D[b, i] = ||s_i(x1_b) - s_i(x2_b)||^2:
# - L_rec: mean squared error between g(z) and the images in [0, 1], over both images of every
#   pair. Shapes3D is decoded linearly, with no sigmoid [code].
# - L_spar (eq. 1): sum_i |s_i * sum_{j != i} s_j|, summed over the subspaces and averaged over the
#   images and the d coordinates [code]. That is eq. 1's L1 norm divided by d.
# - L_dis: i*_b, the subspace the pair changes most, is the argmax over i of D[b, i] divided by
#   subspace i's mean Euclidean distance between the batch's 2B codes. Every ordered pair counts,
#   self pairs included [code]. M is its one-hot, without gradient. L_dis is the mean over the
#   B x k entries of (1 - M) D + 10 M relu(0.05 - D). The other subspaces are pulled together,
#   the changed one is kept at least 0.05 apart [code]. The raw D enters the loss; the normalised
#   one only picks i* [code]. The authors' expression, mean 10 relu(0.05 - M D), also counts
#   10 x 0.05 for each other entry. That is a constant 0.45 at k = 10, without gradient, left out
#   of dis_loss here.
# - L_cons: 2B of the k x B mixes, drawn anew each step without replacement [code]. A mix takes
#   subspace i from x1_b and the others from x2_b: z_mix = s_i(x1_b) + sum_{j != i} s_j(x2_b).
#   It is decoded and re-encoded, and its k codes must equal the mixed ones. The loss is the mean
#   squared error over all codes, with gradients through both sides [code].
# - L_reg: 100 * mean_i (1/k - mean_b softmax_i(1000 D[b, :]))^2. Every subspace should be the one
#   that changes for about 1/k of the pairs [code].
#
# Schedule over the run's T steps: t = step / T, read from the optimizer's step inside the compiled
# train_step. Reconstruction alone while t <= method.warmup: 0.25 [code], 20% in the supplement.
# Then b1 = min(exp(25 (t - 0.4)), 1), b2 = min(exp(25 (t - 0.5)), 1) and b3 = 1 - b1 [code]. The
# supplement says b3 = 1 - b2. L_cons costs a decoder and an encoder pass, so it is computed only
# once b2 > 0.01, as in the authors' code. t moves every step [ours]. The authors' code evaluates
# the same functions at t = epoch / epochs, so its weights rise in stairs, 30 in their notebook.
# Its warm-up lasts until the first epoch above 0.25 x the epochs: epochs 0-7 of 30, 27% of the run.
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
