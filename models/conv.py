"""Convolutional encoders of docs/PAPERS.md section 2: S3 for Shapes3D, S4 for MNIST, S6 for faces and cars.

All convolutions are 3x3 with 'valid' padding and ReLU, as in the tables.
"""

from __future__ import annotations

import keras

from models.architectures import register


def _conv_encoder(
    name: str,
    input_shape: tuple[int, int, int],
    conv_layers: list[tuple[int, int]],
    hidden_units: int,
    embedding_dim: int,
) -> keras.Model:
    """conv_layers: (filters, stride) pairs; then Flatten, Dense(hidden) ReLU, Dense(d) linear."""
    inputs = keras.Input(shape=input_shape, name="images")
    x = inputs
    for index, (filters, stride) in enumerate(conv_layers):
        x = keras.layers.Conv2D(
            filters, 3, strides=stride, padding="valid", activation="relu", name=f"conv{index + 1}"
        )(x)
    x = keras.layers.Flatten(name="flatten")(x)
    x = keras.layers.Dense(hidden_units, activation="relu", name="hidden")(x)
    # float32 even under a mixed-precision policy: distances between embeddings need the precision.
    outputs = keras.layers.Dense(embedding_dim, name="embedding", dtype="float32")(x)
    return keras.Model(inputs, outputs, name=name)


@register("s3")
def s3(embedding_dim: int = 64, input_shape: tuple[int, int, int] = (64, 64, 3)) -> keras.Model:
    """Table S3, Shapes3D."""
    layers = [(32, 1), (32, 1), (64, 2), (64, 1), (128, 1), (128, 2)]
    return _conv_encoder("s3", tuple(input_shape), layers, 128, embedding_dim)


@register("s4")
def s4(embedding_dim: int = 8, input_shape: tuple[int, int, int] = (28, 28, 1)) -> keras.Model:
    """Table S4, MNIST."""
    layers = [(32, 1), (32, 1), (32, 2), (32, 1), (32, 1)]
    return _conv_encoder("s4", tuple(input_shape), layers, 128, embedding_dim)


@register("s6")
def s6(
    embedding_dim: int = 64, channels: int = 1, input_shape: tuple[int, int, int] | None = None
) -> keras.Model:
    """Table S6: YaleB faces, 64x64x1, or EPFL cars, 64x64x3."""
    if input_shape is None:
        if channels not in (1, 3):
            raise ValueError(f"S6 takes 1 (faces) or 3 (cars) channels, got {channels}.")
        input_shape = (64, 64, channels)
    layers = [(64, 1), (64, 2), (128, 1), (128, 2), (256, 1), (256, 2)]
    return _conv_encoder("s6", tuple(input_shape), layers, 128, embedding_dim)
