"""Spherical-regression pose head (Liao et al. 2019), docs/PAPERS.md sections 2 and 5.

The head L2-normalises embeddings [B, D] onto the unit sphere, as the cosine ABC loss sees them.
For each Euler angle separately, i.e. azimuth, elevation and tilt, it applies Dense128 tanh and two linear
layers. Dense2 gives the magnitudes (|sin phi|, |cos phi|);
Dense4 gives the quadrant (sign sin phi, sign cos phi).

Outputs, a dict:
  ``magnitude``        [B, 3, 2]: the spherical exponential sqrt(softmax(o)) of the Dense2 outputs.
                       Unit norm, non-negative: an estimate of (|sin|, |cos|).
  ``quadrant_logits``  [B, 3, 4]: logits over the quadrant classes of :func:`quadrant_labels`.

Angles are in radians. The loss is :func:`spherical_regression_loss`; :func:`decode_angles` decodes.
"""

from __future__ import annotations

import keras
from keras import ops

from models.architectures import register

NUM_ANGLES = 3
HIDDEN_UNITS = 128
# Quadrant class = 2 * [sin < 0] + [cos < 0]: (+,+) 0, (+,-) 1, (-,+) 2, (-,-) 3.
QUADRANT_SIGNS = ((1.0, 1.0), (1.0, -1.0), (-1.0, 1.0), (-1.0, -1.0))


@keras.saving.register_keras_serializable(package="abc_tf")
class SphericalExponential(keras.layers.Layer):
    """sqrt(softmax(o)) over the last axis: a point on the positive orthant of the unit sphere.

    Computed as exp(log_softmax(o) / 2). The value is the same, but the gradient stays finite when a
    softmax probability underflows to 0, where sqrt's gradient is infinite.
    """

    def call(self, logits):
        return keras.ops.exp(0.5 * keras.ops.log_softmax(logits, axis=-1))


@keras.saving.register_keras_serializable(package="abc_tf")
class L2Normalize(keras.layers.Layer):
    """Scales each embedding [B, D] to unit L2 norm: the sphere the cosine ABC loss works on."""

    def call(self, inputs):
        return keras.ops.normalize(inputs, axis=-1, order=2)


@keras.saving.register_keras_serializable(package="abc_tf")
class StackAngles(keras.layers.Layer):
    """Stacks the per-angle outputs, a list of [B, K], into [B, angles, K]."""

    def call(self, inputs):
        return keras.ops.stack(inputs, axis=1)


@register("spherical_regression")
def spherical_regression_head(embedding_dim: int = 64, hidden_units: int = HIDDEN_UNITS) -> keras.Model:
    """The head of docs/PAPERS.md section 2: embeddings [B, D] -> {"magnitude", "quadrant_logits"}."""
    embeddings = keras.Input(shape=(embedding_dim,), name="embedding")
    # float32 throughout (also under a mixed-precision policy): the head is tiny and the
    # spherical exponential and angle decoding want the precision.
    sphere = L2Normalize(name="l2_normalize", dtype="float32")(embeddings)
    magnitudes, quadrants = [], []
    for index, angle in enumerate(("azimuth", "elevation", "tilt")[:NUM_ANGLES]):
        hidden = keras.layers.Dense(hidden_units, activation="tanh", name=f"{angle}_hidden", dtype="float32")(
            sphere
        )
        magnitude_logits = keras.layers.Dense(2, name=f"{angle}_magnitude_logits", dtype="float32")(hidden)
        magnitudes.append(SphericalExponential(name=f"{angle}_magnitude", dtype="float32")(magnitude_logits))
        quadrants.append(keras.layers.Dense(4, name=f"{angle}_quadrant", dtype="float32")(hidden))
    outputs = {
        "magnitude": StackAngles(name="magnitude", dtype="float32")(magnitudes),
        "quadrant_logits": StackAngles(name="quadrant_logits", dtype="float32")(quadrants),
    }
    return keras.Model(embeddings, outputs, name="spherical_regression")


def quadrant_labels(angles) -> "keras.KerasTensor":
    """Angles [..., 3] in radians -> quadrant classes [..., 3] int32, 2 * [sin < 0] + [cos < 0].

    A sine or cosine of exactly 0 counts as positive. The magnitude is 0 there, so either sign decodes alike.
    """
    angles = ops.convert_to_tensor(angles, "float32")
    negative_sin = ops.cast(ops.sin(angles) < 0, "int32")
    negative_cos = ops.cast(ops.cos(angles) < 0, "int32")
    return 2 * negative_sin + negative_cos


def spherical_regression_loss(angles, outputs: dict):
    """Magnitude loss + quadrant cross entropy, averaged over the batch and the 3 angles.

    angles: [B, 3] true Euler angles in radians. outputs: the head's dict.
    Magnitude loss: 1 - cos_sim(predicted magnitudes, (|sin|, |cos|)). Both have unit norm, so this is
    1 - their dot product, 0 when equal. Quadrant loss: sparse categorical cross entropy of the 4 logits
    against :func:`quadrant_labels`.
    """
    angles = ops.cast(angles, "float32")
    target = ops.stack([ops.abs(ops.sin(angles)), ops.abs(ops.cos(angles))], axis=-1)  # [B, 3, 2], unit norm
    magnitude = ops.cast(outputs["magnitude"], "float32")
    cosine = ops.sum(ops.normalize(magnitude, axis=-1, order=2) * target, axis=-1)
    magnitude_loss = ops.mean(1.0 - cosine)
    quadrant_loss = ops.mean(
        ops.sparse_categorical_crossentropy(
            quadrant_labels(angles), ops.cast(outputs["quadrant_logits"], "float32"), from_logits=True
        )
    )
    return magnitude_loss + quadrant_loss


def decode_angles(outputs: dict):
    """Head outputs -> Euler angles [B, 3] in radians, ``atan2(s_sin |sin|, s_cos |cos|)``.

    The signs come from the most likely quadrant class. Result in (-pi, pi].
    """
    magnitude = ops.cast(outputs["magnitude"], "float32")
    quadrant = ops.argmax(outputs["quadrant_logits"], axis=-1)
    signs = ops.take(ops.convert_to_tensor(QUADRANT_SIGNS, "float32"), quadrant, axis=0)  # [B, 3, 2]
    return ops.arctan2(signs[..., 0] * magnitude[..., 0], signs[..., 1] * magnitude[..., 1])
