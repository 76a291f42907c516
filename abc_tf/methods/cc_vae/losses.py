"""CC-VAE's two cycles and the random draws of a step, as pure functions.

CcVaeModel (abc_tf/methods/cc_vae/model.py) weighs each cycle into its update. The comment under
the imports defines both cycles' terms, with the authors' code lines.
"""

from __future__ import annotations

import keras
import tensorflow as tf

from abc_tf.methods.base import draw_rows
from abc_tf.methods.distributions import gaussian_kl

# 1. Forward cycle: the encoder and decoder, with compile's optimizer, whose steps number the run.
#    A shuffle of each stack from (seed, step) makes K = floor(N / 2) disjoint pairs (x1, x2), at
#    positions 2k and 2k + 1. With z_i = mu(x_i) + exp(lv(x_i) / 2) e_i, e_i ~ N(0, I), each
#    member is rebuilt from its own z and its partner's s:
#
#      reconstruction = mean_pairs,pixels (g(z1, s2) - x1)^2 + mean_pairs,pixels (g(z2, s1) - x2)^2
#      kl = (sum over the 2 P K images of KL(q(z | x) || N(0, I))) / (P K x pixels)
#      forward_loss = reconstruction_weight x reconstruction + kl_weight x kl
#
#    Source: training.py L128-150; their batch is the P K pairs.
# 2. Reverse cycle, after the forward update: the encoder's convolutions and style-mean head, with
#    the second optimizer. For pair k of stack p, z_k ~ N(0, I) is decoded twice. Once with the
#    specified code of the pair's first member. Once with that of the image of set_b's stack p at
#    the second member's position, another group. Both codes carry no gradient. The two images are
#    re-encoded, and
#
#      reverse_cycle = mean_k,dims |mu(g(z_k, s(a_k))) - mu(g(z_k, s(b_k)))|
#      reverse_loss = reverse_cycle_weight x reverse_cycle
#
#    Source: training.py L157-184. The decoder, the specified head and the log-variance head get
#    no gradient from it. The authors' reverse optimiser holds the encoder only. Both heads get a
#    zero gradient there, since the codes are detached and the log-variance unread. That leaves
#    Adam's step at zero.
#
# The forward update draws the shuffle, e and z from (seed, step) and hands them to the reverse
# one. A resumed run draws what an unbroken one would. Under a distribution strategy each replica
# takes its rows of the global batch's draws (draw_rows). The logged loss takes the reverse cycle
# after the forward update.


# ---------------------------------------------------------------- the cycles


def _flat(images: tf.Tensor) -> tf.Tensor:
    """[P, K, H, W, C] -> [P K, H, W, C]."""
    shape = tf.shape(images)
    return tf.reshape(images, tf.concat([[shape[0] * shape[1]], shape[2:]], 0))


def _encode(posterior: keras.Model, images: tf.Tensor, training: bool) -> list[tf.Tensor]:
    """The posterior's three outputs, float32 [P K, d], of float images [P, K, H, W, C]."""
    return [tf.cast(value, tf.float32) for value in posterior(_flat(images), training=training)]


def forward_cycle(
    posterior: keras.Model,
    decoder: keras.Model,
    sets: tf.Tensor,
    draws: dict[str, tf.Tensor],
    training: bool = True,
) -> dict[str, tf.Tensor]:
    """The forward cycle of float images ``sets`` [P, N, H, W, C] in [0, 1], a group per stack.

    draws: "order" int [P, 2K], the stack's positions in pair order; pair k is 2k and 2k + 1.
    "style_noise" [P, 2K, d_z] is the reparameterisation noise e of the images in that order.
    Returns float32 scalars "reconstruction" and "kl", as the comment under the imports defines
    them. Per image in pair order [P, 2K]: "squared_error", a mean over pixels, and "kl_image".
    And "reconstructed" [P, 2K, H, W, C].
    """
    images = tf.gather(sets, draws["order"], batch_dims=1)
    shape = tf.shape(images)
    groups, members = shape[0], shape[1]
    style_mean, style_log_variance, class_code = _encode(posterior, images, training)
    noise = tf.reshape(draws["style_noise"], tf.shape(style_mean))
    style = style_mean + tf.exp(0.5 * style_log_variance) * noise
    # Each member takes its partner's specified code: swap the two members of every pair.
    partner = tf.reshape(
        tf.reverse(tf.reshape(class_code, [groups * members // 2, 2, -1]), axis=[1]), tf.shape(class_code)
    )
    reconstructed = tf.cast(decoder([style, partner], training=training), tf.float32)
    flat = _flat(images)
    squared_error = tf.reduce_mean(
        tf.reshape(tf.square(reconstructed - flat), [groups * members, -1]), axis=1
    )
    pixels = tf.cast(tf.reduce_prod(shape[2:]), tf.float32)
    kl_image = gaussian_kl(style_mean, style_log_variance)
    # Two means over the pairs' members (first, second) = twice the mean over all; the KL sum
    # over both members divided by pairs x pixels = twice the mean over all / pixels.
    return {
        "reconstruction": 2.0 * tf.reduce_mean(squared_error),
        "kl": 2.0 * tf.reduce_mean(kl_image) / pixels,
        "squared_error": tf.reshape(squared_error, [groups, members]),
        "kl_image": tf.reshape(kl_image, [groups, members]),
        "reconstructed": tf.reshape(reconstructed, shape),
    }


def reverse_cycle(
    posterior: keras.Model,
    decoder: keras.Model,
    set_a: tf.Tensor,
    set_b: tf.Tensor,
    draws: dict[str, tf.Tensor],
    training: bool = True,
) -> dict[str, tf.Tensor]:
    """The reverse cycle of float images ``set_a``, ``set_b`` [P, N, H, W, C], two groups per p.

    draws: "order" [P, 2K] as in :func:`forward_cycle`. Pair k takes ``set_a[p, order[p, 2k]]``
    and ``set_b[p, order[p, 2k + 1]]``. "z" [P, K, d_z] ~ N(0, I).
    Returns the float32 scalar "reverse_cycle" and "generated" [2, P K, H, W, C], from a's codes
    and from b's. "style_means" [2, P K, d_z] are their re-encoded style means.
    """
    first = tf.gather(set_a, draws["order"][:, 0::2], batch_dims=1)
    second = tf.gather(set_b, draws["order"][:, 1::2], batch_dims=1)
    both = tf.concat([first, second], axis=0)  # [2P, K, ...]: no layer mixes images, so one pass
    class_code = tf.stop_gradient(_encode(posterior, both, training)[2])
    z = tf.reshape(draws["z"], [-1, tf.shape(draws["z"])[-1]])
    generated = tf.cast(decoder([tf.concat([z, z], axis=0), class_code], training=training), tf.float32)
    style_mean = tf.cast(posterior(generated, training=training)[0], tf.float32)
    style_means = tf.reshape(style_mean, [2, tf.shape(z)[0], -1])
    return {
        "reverse_cycle": tf.reduce_mean(tf.abs(style_means[0] - style_means[1])),
        "generated": tf.reshape(generated, tf.concat([[2, tf.shape(z)[0]], tf.shape(generated)[1:]], 0)),
        "style_means": style_means,
    }


def draw_step(seed: tf.Tensor, groups, size, style_dim: int) -> dict[str, tf.Tensor]:
    """The random draws of one step from a stateless seed [2], for ``groups`` stacks of ``size``.

    "order" int32 [groups, 2K]: the first 2K = 2 floor(size / 2) positions of a uniform shuffle
    of each stack, by argsort of uniform draws.
    "style_noise" [groups, 2K, d_z] and "z" [groups, K, d_z]: standard normal.
    Under a distribution strategy, this replica's rows of the global batch's draws
    (``draw_rows``).
    """
    order_seed, noise_seed, z_seed = tf.unstack(tf.random.experimental.stateless_split(seed, 3))
    size = tf.cast(size, tf.int32)
    pairs = size // 2

    def shuffle(rows):
        uniform = tf.random.stateless_uniform(tf.stack([rows, size]), seed=order_seed)
        return tf.argsort(uniform, axis=1, stable=True)[:, : 2 * pairs]

    def normal(count, seed):
        return lambda rows: tf.random.stateless_normal(tf.stack([rows, count, style_dim]), seed=seed)

    return {
        "order": tf.cast(draw_rows(shuffle, groups), tf.int32),
        "style_noise": draw_rows(normal(2 * pairs, noise_seed), groups),
        "z": draw_rows(normal(pairs, z_seed), groups),
    }
