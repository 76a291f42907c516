"""LORD's two stages' loss terms, its reconstruction errors and stage 1's learning rate.

Pure functions of the networks, the images and the codes; LordModel (abc_tf/methods/lord/model.py)
calls them under the stage switch. The comment under the imports defines both losses and the
reconstruction error r, with the authors' code lines and what is ours.
"""

from __future__ import annotations

import math

import keras
import tensorflow as tf

# Stage 1 (latent optimisation) trains the class and content tables, the modulation and the
# generator with one Adam (betas 0.5, 0.999) on reconstruction + content_decay sum_i ||c_i||^2.
# The penalty is summed over the step's codes, not averaged: the authors' Keras l2 activity
# regulariser (network.py L211) is added to the batch-mean loss undivided. Each table is stored
# divided by latent_lr_multiplier and read times it, so Adam, blind to a gradient's scale, moves it
# that many times faster. Stage 2 (amortisation) trains the encoders and the generator with a fresh
# Adam to give the stage-1 codes, read without noise or gradient (the authors precompute them,
# L163), as well as to reconstruct.
# reconstruction="pixel" [ours] is the mean absolute error on the 0-255 scale the authors' VGG
# reads (L405-407), near their perceptual loss's size, so content_decay and code_weight keep their
# balance. "perceptual" is theirs (L169-191): five VGG16 feature maps weighted 1/5; their
# multiscale wrapper is the identity at 64 x 64 (config.py L14), so we compare at the images' size.
PIXEL_SCALE = 255.0


def pixel_error(images: tf.Tensor, generated: tf.Tensor) -> tf.Tensor:
    """[B]: the mean absolute error of each image on the 0-255 scale."""
    difference = tf.abs(tf.cast(generated, tf.float32) - tf.cast(images, tf.float32))
    return PIXEL_SCALE * tf.reduce_mean(tf.reshape(difference, [tf.shape(images)[0], -1]), axis=1)


def perceptual_error(vgg: keras.Model, images: tf.Tensor, generated: tf.Tensor) -> tf.Tensor:
    """[B]: the authors' perceptual loss per image.

    It sums 1/5 x the mean absolute difference of each feature map.
    Source: network.py L169-180.
    """
    rows = tf.shape(images)[0]
    features = vgg(tf.concat([tf.cast(generated, tf.float32), tf.cast(images, tf.float32)], axis=0))
    errors = [tf.reduce_mean(tf.reshape(tf.abs(f[:rows] - f[rows:]), [rows, -1]), axis=1) for f in features]
    return tf.add_n(errors) / float(len(errors))


def cosine_rate(step, stage1_steps: int, max_rate: float, min_rate: float) -> tf.Tensor:
    """Stage 1's learning rate at ``step``: min + (max - min) (1 + cos(pi step / stage1_steps)) / 2.

    The authors evaluate it per epoch, we per step. Source: network.py L421-438.
    """
    fraction = tf.minimum(tf.cast(step, tf.float32) / float(stage1_steps), 1.0)
    return min_rate + 0.5 * (max_rate - min_rate) * (1.0 + tf.cos(math.pi * fraction))


def _flat(values: tf.Tensor) -> tf.Tensor:
    """[P, N, ...] -> [P N, ...]."""
    shape = tf.shape(values)
    return tf.reshape(values, tf.concat([[shape[0] * shape[1]], shape[2:]], 0))


def latent_terms(
    generator: keras.Model,
    error,
    images: tf.Tensor,
    content: tf.Tensor,
    class_codes: tf.Tensor,
    noise: tf.Tensor,
    content_std: float,
    content_decay: float,
    total_images,
) -> dict[str, tf.Tensor]:
    """Stage 1's terms on float images [P, N, H, W, C].

    ``content`` [P, N, d_c] and ``class_codes`` [P, N, d_y] are the images' codes.
    ``noise`` [P, N, d_c] is standard normal. ``error`` maps (images, generated) -> [B].
    ``total_images`` counts the step's images over all replicas.
    """
    generated = generator([_flat(content + content_std * noise), _flat(class_codes)])
    reconstruction = tf.reduce_mean(error(_flat(images), generated))
    penalty = (
        content_decay
        * tf.cast(total_images, tf.float32)
        * tf.reduce_mean(tf.reduce_sum(tf.square(content), -1))
    )
    return {
        "latent_loss": reconstruction + penalty,
        "latent_reconstruction": reconstruction,
        "content_penalty": penalty,
    }


def amortized_terms(
    generator: keras.Model,
    content_encoder: keras.Model,
    class_encoder: keras.Model,
    error,
    images: tf.Tensor,
    content: tf.Tensor,
    class_codes: tf.Tensor,
    code_weight: float,
    training: bool = True,
) -> dict[str, tf.Tensor]:
    """Stage 2's terms on float images [P, N, H, W, C].

    The targets are the optimised codes ``content`` [P, N, d_c] and ``class_codes`` [P, N, d_y].
    No gradient reaches them.
    """
    flat = _flat(images)
    predicted_content = content_encoder(flat, training=training)
    predicted_class = class_encoder(flat, training=training)
    reconstruction = tf.reduce_mean(
        error(flat, generator([predicted_content, predicted_class], training=training))
    )
    content_error = tf.reduce_mean(tf.square(predicted_content - tf.stop_gradient(_flat(content))))
    class_error = tf.reduce_mean(tf.square(predicted_class - tf.stop_gradient(_flat(class_codes))))
    return {
        "amortized_loss": reconstruction + code_weight * (content_error + class_error),
        "amortized_reconstruction": reconstruction,
        "content_error": content_error,
        "class_error": class_error,
    }
