"""Product-manifold projection networks (docs/PAPERS.md section P1; Fumero et al. 2021, supplement Table 1).

- ``pmp_encoder`` f: 64x64 images -> four 4x4 stride-2 convolutions, padding 1, of 32, 32, 64, 64
  filters with ReLU -> FC 256 ReLU -> FC d. Keras's ``padding="same"`` equals the table's padding 1 here.
- ``pmp_decoder`` g: R^d -> FC 256 ReLU -> FC 256 ReLU -> FC 64*4*4 ReLU -> four 4x4 stride-2
  transposed convolutions: 64, 32, 32 with ReLU, then the image channels, linear. The authors decode
  Shapes3D with a mean squared error and no sigmoid [code].
- ``pmp_projectors``: the k projectors P_i (Dense d, ReLU, Dense d [code]) as one layer.
  It maps f(x) [B, d] to subspace codes s [B, k, d], all k in two batched products.

:func:`representation` joins f, the projectors and the sum z = sum_i s_i into the model evaluators
embed with. Inputs are float32 images in [0, 1].
"""

from __future__ import annotations

import math

import keras
from keras import ops

from models.architectures import register

ENCODER_FILTERS = (32, 32, 64, 64)
DECODER_FILTERS = (64, 32, 32)
HIDDEN_UNITS = 256
KERNEL, STRIDE = 4, 2
DOWNSAMPLING = STRIDE ** len(ENCODER_FILTERS)  # 16: a 64x64 image ends as 4x4


def _check_size(shape: tuple[int, int, int], what: str) -> None:
    height, width, _ = shape
    if height % DOWNSAMPLING or width % DOWNSAMPLING or height <= 0 or width <= 0:
        raise ValueError(
            f"{what} takes images whose sides are multiples of {DOWNSAMPLING} (Table 1: 64x64); "
            f"got {tuple(shape)}."
        )


@register("pmp_encoder")
def pmp_encoder(embedding_dim: int = 10, input_shape: tuple[int, int, int] = (64, 64, 3)) -> keras.Model:
    """The encoder f of Table 1: images [B, H, W, C] -> [B, d], float32 output."""
    _check_size(tuple(input_shape), "pmp_encoder")
    inputs = keras.Input(shape=tuple(input_shape), name="images")
    x = inputs
    for index, filters in enumerate(ENCODER_FILTERS):
        x = keras.layers.Conv2D(
            filters, KERNEL, strides=STRIDE, padding="same", activation="relu", name=f"conv{index + 1}"
        )(x)
    x = keras.layers.Flatten(name="flatten")(x)
    x = keras.layers.Dense(HIDDEN_UNITS, activation="relu", name="hidden")(x)
    outputs = keras.layers.Dense(embedding_dim, name="features", dtype="float32")(x)
    return keras.Model(inputs, outputs, name="pmp_encoder")


@register("pmp_decoder")
def pmp_decoder(embedding_dim: int = 10, output_shape: tuple[int, int, int] = (64, 64, 3)) -> keras.Model:
    """The decoder g of Table 1: z [B, d] -> images [B, H, W, C], linear, float32 output."""
    _check_size(tuple(output_shape), "pmp_decoder")
    height, width, channels = output_shape
    start = (height // DOWNSAMPLING, width // DOWNSAMPLING, DECODER_FILTERS[0])
    inputs = keras.Input(shape=(embedding_dim,), name="z")
    x = keras.layers.Dense(HIDDEN_UNITS, activation="relu", name="hidden1")(inputs)
    x = keras.layers.Dense(HIDDEN_UNITS, activation="relu", name="hidden2")(x)
    x = keras.layers.Dense(math.prod(start), activation="relu", name="hidden3")(x)
    x = keras.layers.Reshape(start, name="unflatten")(x)
    for index, filters in enumerate(DECODER_FILTERS):
        x = keras.layers.Conv2DTranspose(
            filters, KERNEL, strides=STRIDE, padding="same", activation="relu", name=f"upconv{index + 1}"
        )(x)
    outputs = keras.layers.Conv2DTranspose(
        channels,
        KERNEL,
        strides=STRIDE,
        padding="same",
        name=f"upconv{len(DECODER_FILTERS) + 1}",
        dtype="float32",
    )(x)
    return keras.Model(inputs, outputs, name="pmp_decoder")


@keras.saving.register_keras_serializable(package="abc_tf")
class SubspaceProjectors(keras.layers.Layer):
    """k projectors P_i(x) = W2_i relu(W1_i x + b1_i) + b2_i, each d -> d: [B, d] -> [B, k, d].

    Each projector's kernels start Glorot-uniform over its own d x d shape, as a Dense layer's would.
    Biases start at zero.
    """

    def __init__(self, num_subspaces: int, **kwargs):
        super().__init__(**kwargs)
        if num_subspaces < 1:
            raise ValueError(f"num_subspaces must be positive, got {num_subspaces}.")
        self.num_subspaces = int(num_subspaces)

    def build(self, input_shape):
        dim = int(input_shape[-1])
        k = self.num_subspaces
        limit = math.sqrt(6.0 / (dim + dim))
        init = keras.initializers.RandomUniform(-limit, limit)
        self.kernel1 = self.add_weight(name="kernel1", shape=(k, dim, dim), initializer=init)
        self.bias1 = self.add_weight(name="bias1", shape=(k, dim), initializer="zeros")
        self.kernel2 = self.add_weight(name="kernel2", shape=(k, dim, dim), initializer=init)
        self.bias2 = self.add_weight(name="bias2", shape=(k, dim), initializer="zeros")

    def call(self, inputs):
        hidden = ops.relu(ops.einsum("bd,kde->bke", inputs, self.kernel1) + self.bias1)
        return ops.einsum("bkd,kde->bke", hidden, self.kernel2) + self.bias2

    def compute_output_shape(self, input_shape):
        return (input_shape[0], self.num_subspaces, input_shape[-1])

    def get_config(self) -> dict:
        return {**super().get_config(), "num_subspaces": self.num_subspaces}


@keras.saving.register_keras_serializable(package="abc_tf")
class SumSubspaces(keras.layers.Layer):
    """The aggregate z = sum_i s_i: [B, k, d] -> [B, d]."""

    def call(self, inputs):
        return ops.sum(inputs, axis=1)

    def compute_output_shape(self, input_shape):
        return (input_shape[0], input_shape[-1])


@register("pmp_projectors")
def pmp_projectors(embedding_dim: int = 10, num_subspaces: int = 10) -> keras.Model:
    """The k projectors: f(x) [B, d] -> subspace codes [B, k, d], in float32.

    Float32 because the sparsity and distance losses compare small codes.
    """
    inputs = keras.Input(shape=(embedding_dim,), name="features")
    outputs = SubspaceProjectors(num_subspaces, name="projectors", dtype="float32")(inputs)
    return keras.Model(inputs, outputs, name="pmp_projectors")


def representation(
    encoder: keras.Model, projectors: keras.Model, name: str = "pmp_representation"
) -> keras.Model:
    """Images -> z = sum_i P_i(f(x)) [B, d], sharing the weights of ``encoder`` and ``projectors``."""
    inputs = keras.Input(shape=encoder.input_shape[1:], name="images")
    codes = projectors(encoder(inputs))
    return keras.Model(inputs, SumSubspaces(name="aggregate", dtype="float32")(codes), name=name)
