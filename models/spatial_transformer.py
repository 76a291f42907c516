"""A differentiable affine spatial transformer: VITAE's T_theta (docs/PAPERS.md section P2).

Images live on the normalised grid [-1, 1] x [-1, 1]: x along the width, y along the height.
Corner pixel centres sit at -1 and +1; pixel column j of W is at x = -1 + 2 j / (W - 1).
An affine map is a [B, 2, 3] matrix A. Warping by A makes output pixel p = (x, y) show the input
at A (x, y, 1), by bilinear interpolation, zero outside. So A = [[1, 0, t], [0, 1, 0]] shows at x
the content at x + t: the picture moves by -t.

theta in R^6 gives the paper's diffeomorphic map (supplement eq. 3):
T_theta = expm([[t1, t2, t3], [t4, t5, t6], [0, 0, 0]]), with inverse T_{-theta}.
Ours: expm is scaling and squaring of a Taylor series in ``keras.ops``, since Keras has none and the
models stay backend-free. Tests check it against ``tf.linalg.expm``. The sampler gathers the four
neighbours of each point, so the output is differentiable in the image and in theta. TensorFlow's
ImageProjectiveTransform op has no gradient for its transform.
"""

from __future__ import annotations

import keras
from keras import ops

THETA_DIM = 6
# expm(M) = expm(M / 2^s)^(2^s) with a Taylor series of order q for expm(M / 2^s). With s = 4
# and q = 12 the truncation error stays below float32 rounding for ||M|| up to about 20, far
# beyond the transformations a 28 x 28 digit can show.
SQUARINGS, TAYLOR_ORDER = 4, 12


def generator(theta):
    """theta [B, 6] -> the 3 x 3 generators [[t1 t2 t3], [t4 t5 t6], [0 0 0]] [B, 3, 3]."""
    top = ops.reshape(theta, (-1, 2, 3))
    return ops.concatenate([top, ops.zeros_like(top[:, :1, :])], axis=1)


def expm(matrices):
    """The matrix exponential of square matrices [B, n, n], by scaling and squaring (module docstring)."""
    n = ops.shape(matrices)[-1]
    scaled = matrices / float(2**SQUARINGS)
    identity = ops.broadcast_to(ops.eye(n, dtype=matrices.dtype), ops.shape(matrices))
    # Horner: I + X (I + X/2 (I + X/3 (... (I + X/q)))).
    result = identity
    for k in range(TAYLOR_ORDER, 0, -1):
        result = identity + ops.matmul(scaled, result) / float(k)
    for _ in range(SQUARINGS):
        result = ops.matmul(result, result)
    return result


def affine_matrices(theta, inverse: bool = False):
    """theta [B, 6] -> T_theta [B, 2, 3]; with ``inverse``, T_{-theta}."""
    theta = -theta if inverse else theta
    return expm(generator(theta))[:, :2, :]


def normalised_grid(height: int, width: int):
    """The output pixels' coordinates (x, y, 1) on the normalised grid: [H * W, 3], row-major."""
    ys = ops.linspace(-1.0, 1.0, height) if height > 1 else ops.zeros((1,))
    xs = ops.linspace(-1.0, 1.0, width) if width > 1 else ops.zeros((1,))
    y, x = ops.meshgrid(ys, xs, indexing="ij")
    x, y = ops.reshape(x, (-1,)), ops.reshape(y, (-1,))
    return ops.stack([x, y, ops.ones_like(x)], axis=1)


def warp(images, matrices):
    """images [B, H, W, C] warped by affine maps [B, 2, 3] -> [B, H, W, C]; see the module docstring."""
    images = ops.convert_to_tensor(images)
    batch, height, width, channels = ops.shape(images)[0], images.shape[1], images.shape[2], images.shape[3]
    matrices = ops.cast(matrices, images.dtype)
    grid = ops.cast(normalised_grid(height, width), images.dtype)  # [P, 3]
    source = ops.einsum("bij,pj->bpi", matrices, grid)  # [B, P, 2]: (x, y) read for each output pixel
    # Back to pixel units: column = (x + 1) (W - 1) / 2, row = (y + 1) (H - 1) / 2.
    column = (source[..., 0] + 1.0) * (0.5 * (width - 1))
    row = (source[..., 1] + 1.0) * (0.5 * (height - 1))
    column0, row0 = ops.floor(column), ops.floor(row)
    dx, dy = column - column0, row - row0  # the bilinear weights carry the gradient to theta
    flat = ops.reshape(images, (-1, channels))
    offsets = ops.reshape(ops.arange(batch, dtype="int32") * (height * width), (-1, 1))
    result = 0.0
    for corner_row, corner_column, weight in (
        (row0, column0, (1.0 - dy) * (1.0 - dx)),
        (row0, column0 + 1.0, (1.0 - dy) * dx),
        (row0 + 1.0, column0, dy * (1.0 - dx)),
        (row0 + 1.0, column0 + 1.0, dy * dx),
    ):
        # Neighbours outside the image read zero: clipped indices, weight masked.
        inside = ops.logical_and(
            ops.logical_and(corner_row >= 0, corner_row <= height - 1),
            ops.logical_and(corner_column >= 0, corner_column <= width - 1),
        )
        r = ops.cast(ops.clip(corner_row, 0, height - 1), "int32")
        c = ops.cast(ops.clip(corner_column, 0, width - 1), "int32")
        values = ops.take(flat, offsets + r * width + c, axis=0)  # [B, P, C]
        result = result + values * ops.expand_dims(weight * ops.cast(inside, images.dtype), -1)
    return ops.reshape(result, (-1, height, width, channels))


@keras.saving.register_keras_serializable(package="abc_tf")
class SpatialTransformer(keras.layers.Layer):
    """[images [B, H, W, C], theta [B, 6]] -> images warped by T_theta, in float32.

    With ``inverse`` it warps by T_{-theta}.
    """

    def __init__(self, inverse: bool = False, **kwargs):
        kwargs.setdefault("dtype", "float32")
        super().__init__(**kwargs)
        self.inverse = bool(inverse)

    def call(self, inputs):
        images, theta = inputs
        images, theta = ops.cast(images, "float32"), ops.cast(theta, "float32")
        return warp(images, affine_matrices(theta, inverse=self.inverse))

    def compute_output_shape(self, input_shape):
        return input_shape[0]

    def get_config(self) -> dict:
        return {**super().get_config(), "inverse": self.inverse}
