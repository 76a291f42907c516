"""The negative ELBO of the VAE and the VITAE peers, as pure functions.

:func:`infer` runs inference and generation as the variant's Structure declares;
:func:`elbo_terms` and :func:`log_weights` read its output. The model's loss and the test
likelihood (abc_tf/evaluation/tasks/likelihood.py) share them. The comment under the imports
gives the model, the loss and the augmentation, with what is ours.
"""

from __future__ import annotations

import math

import keras
import tensorflow as tf

from abc_tf.methods.base import draw_rows
from abc_tf.methods.distributions import gaussian_kl
from abc_tf.methods.vae import Structure
from models import spatial_transformer

# The warp: x^ = T_theta(dec_A(z_A)), theta = dec_P(z_P) in R^6. T_theta is the diffeomorphic
# affine map expm([[t1 t2 t3], [t4 t5 t6], [0 0 0]]) (models/spatial_transformer.py).
# Inference by variant:
# - vae, no perspective: one latent space z of d = --method.latent_dim (4 in the paper), q(z | x),
#   x^ = dec(z).
# - u_vitae, a perspective space: q_P(z_P | x) and q_A(z_A | x), both from the image, with
#   d_A = d_P = latent_dim / 2.
# - c_vitae, the appearance aligned: q_P(z_P | x), theta = dec_P(z_P), and x' = T_{-theta}(x), the
#   image with the perspective undone. The appearance is inferred from it: q_A(z_A | x').
#
# The loss, averaged over a batch of B images:
#
#   loss = -log p(x | z_A, z_P) + w (KL(q_A || N(0, I)) + KL(q_P || N(0, I)))
#
# One reparameterised sample per image, and w = min(step / (kl_warmup * steps), 1). The paper
# ramps per epoch over half the epochs; we ramp per step [ours]. With w = 1 the loss is the -ELBO
# in nats per image. Pixel probabilities are clipped to [1e-6, 1 - 1e-6] [ours]. The warp reads
# zero outside the template, and a pixel of ink there would otherwise cost an infinite
# log-likelihood.
#
# With affine_augmentation, training images are first warped by a random rotation up to 20
# degrees and a shift up to 10% of the image. That is the authors' disentagelment.py,
# RandomAffine(20, translate 0.1). We sample bilinearly [ours: theirs is nearest-pixel]. Their
# main.py had the same line until the commit "final experimentation" (2019-01-18); it is
# commented out since. Their poster (poster.pdf, same repository) describes its MNIST as randomly
# translated and rotated. The samples' and the augmentation's noise comes from (seed, step), so a
# resumed run draws what an unbroken one would.
PROBABILITY_FLOOR = 1e-6
ROTATION_DEGREES, TRANSLATION = 20.0, 0.1  # the authors' RandomAffine


# ---------------------------------------------------------------- the ELBO terms


def bernoulli_log_likelihood(images: tf.Tensor, probabilities: tf.Tensor) -> tf.Tensor:
    """log p(x | z) [B] of images [B, H, W, C] in [0, 1] under pixel probabilities of the same
    shape.

    It sums x log p + (1 - x) log(1 - p) over pixels, with p clipped to [1e-6, 1 - 1e-6].
    """
    p = tf.clip_by_value(tf.cast(probabilities, tf.float32), PROBABILITY_FLOOR, 1.0 - PROBABILITY_FLOOR)
    x = tf.cast(images, tf.float32)
    per_pixel = x * tf.math.log(p) + (1.0 - x) * tf.math.log(1.0 - p)
    return tf.reduce_sum(tf.reshape(per_pixel, [tf.shape(x)[0], -1]), axis=1)


def gaussian_log_density(z: tf.Tensor, mean: tf.Tensor, variance: tf.Tensor) -> tf.Tensor:
    """log N(z; mean, diag variance) [B] of [B, d]."""
    return -0.5 * tf.reduce_sum(
        tf.math.log(2.0 * math.pi * variance) + tf.square(z - mean) / variance, axis=1
    )


def kl_weight(step, warmup_steps: float) -> tf.Tensor:
    """w = min(step / warmup_steps, 1), float32; 1 when warmup_steps is 0."""
    if warmup_steps <= 0:
        return tf.constant(1.0, tf.float32)
    return tf.minimum(tf.cast(step, tf.float32) / float(warmup_steps), 1.0)


# ---------------------------------------------------------------- inference and generation


def infer(
    networks: dict[str, keras.Model], structure: Structure, images: tf.Tensor, noise: dict[str, tf.Tensor]
) -> dict[str, tf.Tensor]:
    """One pass of inference and generation for float images [B, H, W, C].

    networks: "appearance_posterior" maps images to [mean, variance]; "appearance_decoder" maps
    z_A to pixel probabilities. With a perspective there are also "perspective_posterior" and
    "affine_decoder", which maps z_P to theta [B, 6].
    noise: standard normal draws {"appearance": [B, d_A], "perspective": [B, d_P]}. The
    reparameterisation is z = mean + sqrt(variance) * noise.
    Returns float32 tensors. Each space gives mean, variance and z under its prefix, e.g.
    "appearance_mean". Then "theta", "aligned" (x', the aligned appearance) and "template", which
    is dec_A(z_A). Last, "probabilities": x^, the pixel probabilities of the image.
    """
    out = {}
    appearance_input = images
    if structure.perspective:
        mean, variance = networks["perspective_posterior"](images)
        z_p = mean + tf.sqrt(variance) * noise["perspective"]
        theta = networks["affine_decoder"](z_p)
        out.update(perspective_mean=mean, perspective_variance=variance, perspective_z=z_p, theta=theta)
        if structure.aligned_appearance:
            appearance_input = spatial_transformer.warp(
                images, spatial_transformer.affine_matrices(theta, inverse=True)
            )
            out["aligned"] = appearance_input
    mean, variance = networks["appearance_posterior"](appearance_input)
    z_a = mean + tf.sqrt(variance) * noise["appearance"]
    template = networks["appearance_decoder"](z_a)
    out.update(appearance_mean=mean, appearance_variance=variance, appearance_z=z_a, template=template)
    out["probabilities"] = (
        spatial_transformer.warp(template, spatial_transformer.affine_matrices(out["theta"]))
        if structure.perspective
        else template
    )
    return out


def elbo_terms(images: tf.Tensor, inferred: dict[str, tf.Tensor]) -> dict[str, tf.Tensor]:
    """Per image [B]: "reconstruction", i.e. -log p(x | z), "kl_appearance" and "kl_perspective".

    The VAE's "kl_perspective" is 0.
    """
    terms = {
        "reconstruction": -bernoulli_log_likelihood(images, inferred["probabilities"]),
        "kl_appearance": gaussian_kl(
            inferred["appearance_mean"], tf.math.log(inferred["appearance_variance"])
        ),
    }
    if "perspective_mean" in inferred:
        terms["kl_perspective"] = gaussian_kl(
            inferred["perspective_mean"], tf.math.log(inferred["perspective_variance"])
        )
    else:
        terms["kl_perspective"] = tf.zeros_like(terms["kl_appearance"])
    return terms


def log_weights(images: tf.Tensor, inferred: dict[str, tf.Tensor]) -> tf.Tensor:
    """Importance weights log p(x, z_A, z_P) - log q(z_A, z_P | x) [B] at the sampled z.

    For c_vitae, q = q_P(z_P | x) q_A(z_A | x'), with x' made from that z_P.
    """
    total = bernoulli_log_likelihood(images, inferred["probabilities"])
    for space in ("appearance", "perspective"):
        if f"{space}_z" in inferred:
            z = inferred[f"{space}_z"]
            total += gaussian_log_density(z, tf.zeros_like(z), tf.ones_like(z))
            total -= gaussian_log_density(z, inferred[f"{space}_mean"], inferred[f"{space}_variance"])
    return total


def draw_noise(batch, dims: tuple[int, int], seed: tf.Tensor) -> dict[str, tf.Tensor]:
    """Standard normal draws [batch, d_A] and [batch, d_P] from a stateless seed [2].

    Under a distribution strategy, this replica's rows of the global batch's draws
    (``draw_rows``).
    """
    seeds = tf.random.experimental.stateless_split(seed, 2)

    def normal(dim: int, seed: tf.Tensor):
        return lambda rows: tf.random.stateless_normal(tf.stack([rows, dim]), seed=seed)

    return {
        space: draw_rows(normal(dim, seeds[index]), batch)
        for index, (space, dim) in enumerate(zip(("appearance", "perspective"), dims))
    }


def random_affine(images: tf.Tensor, seed: tf.Tensor) -> tf.Tensor:
    """images [B, H, W, C] warped by a random rotation and translation.

    The rotation is uniform in +-20 degrees about the centre. The translation is uniform in +-10%
    of the width and height; the normalised grid spans 2. Per-image draws as in
    :func:`draw_noise`.
    """
    batch = tf.shape(images)[0]
    draws = draw_rows(
        lambda rows: tf.random.stateless_uniform(tf.stack([rows, 3]), seed=seed, minval=-1.0, maxval=1.0),
        batch,
    )
    angle = draws[:, 0] * math.radians(ROTATION_DEGREES)
    shift = draws[:, 1:] * (2.0 * TRANSLATION)
    cos, sin = tf.cos(angle), tf.sin(angle)
    matrices = tf.reshape(tf.stack([cos, -sin, shift[:, 0], sin, cos, shift[:, 1]], axis=1), [-1, 2, 3])
    return spatial_transformer.warp(images, matrices)
