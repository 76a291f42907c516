"""The probability terms the VAE-family methods share: one definition each, tested once."""

from __future__ import annotations

import tensorflow as tf


def gaussian_kl(mean: tf.Tensor, log_variance: tf.Tensor) -> tf.Tensor:
    """KL(N(mean, diag exp(log_variance)) || N(0, I)) over the last axis.

    It is 0.5 sum(var + mean^2 - 1 - log var).
    Source: disentanglement_lib ``methods/unsupervised/vae.py``, ``compute_gaussian_kl``.
    """
    return 0.5 * tf.reduce_sum(tf.exp(log_variance) + tf.square(mean) - 1.0 - log_variance, axis=-1)


def bernoulli_log_likelihood(images: tf.Tensor, logits: tf.Tensor) -> tf.Tensor:
    """log p(x | z) [B] of images [B, ...] in [0, 1] under pixel logits of the same shape.

    Summed over each image's pixels, it is the negative of disentanglement_lib's ``bernoulli_loss``.
    """
    per_pixel = -tf.nn.sigmoid_cross_entropy_with_logits(labels=tf.cast(images, logits.dtype), logits=logits)
    return tf.reduce_sum(tf.reshape(per_pixel, [tf.shape(logits)[0], -1]), axis=1)
