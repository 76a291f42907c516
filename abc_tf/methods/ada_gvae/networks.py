"""Ada-GVAE's networks: disentanglement_lib's ``conv_encoder`` and ``deconv_decoder`` in Keras, for 64 x 64.

Source: ``methods/shared/architectures.py``; the beta-VAE paper's Table 1, row 3, the chairs networks.
disentanglement_lib's unsupervised and weak studies train them (``shared.gin``).

- encoder (``conv_encoder``): images [B, 64, 64, C] in [0, 1] -> four stride-2 ``"same"`` ReLU convolutions:
  32 channels 4 x 4, 32 4 x 4, 64 2 x 2, 64 2 x 2. The authors' e3 and e4 have ``kernel_size=2``, not the
  table's 4; their code is followed. Then 4 x 4 x 64, flattened -> dense 256, ReLU -> two linear heads of
  ``latent_dim``: the posterior's means and log-variances.
- decoder (``deconv_decoder``): z [B, latent_dim] -> dense 256, ReLU -> dense 1024, ReLU -> 4 x 4 x 64 ->
  4 x 4 stride-2 ``"same"`` transposed convs 64, 32, 32, ReLU, then C linear: Bernoulli logits [B, 64, 64, C].

Initial weights as the authors' TensorFlow 1 ``tf.layers``: Glorot-uniform kernels and zero biases, Keras'
defaults. The heads and the logits are float32 under mixed precision.
"""

from __future__ import annotations

import keras

IMAGE_SIZE = 64  # conv_encoder / deconv_decoder are written for 64 x 64 images
ENCODER_LAYERS = ((32, 4), (32, 4), (64, 2), (64, 2))  # conv_encoder e1-e4: (filters, kernel), stride 2
HIDDEN = 256  # conv_encoder e5; deconv_decoder d1
DECODER_MAP = (4, 4, 64)  # deconv_decoder: dense 1024 reshaped to [4, 4, 64]
DECODER_LAYERS = (64, 32, 32)  # deconv_decoder d3-d5: 4 x 4, stride 2, ReLU; then the output channels
KERNEL, STRIDE = 4, 2
OUTPUTS = ("mean", "log_variance")


def check_shape(shape: tuple[int, ...], what: str) -> None:
    """ValueError unless ``shape`` is (64, 64, C)."""
    if len(shape) != 3 or tuple(shape[:2]) != (IMAGE_SIZE, IMAGE_SIZE):
        raise ValueError(
            f"{what}: disentanglement_lib's conv_encoder / deconv_decoder take {IMAGE_SIZE} x {IMAGE_SIZE} "
            f"images, not {tuple(shape)}."
        )


def gaussian_encoder(
    latent_dim: int = 10, input_shape: tuple[int, int, int] = (64, 64, 3), name: str = "posterior"
) -> keras.Model:
    """q(z | x), ``conv_encoder``: images -> [means, log-variances], each [B, latent_dim] float32."""
    check_shape(input_shape, name)
    images = keras.Input(shape=tuple(input_shape), name="images")
    x = images
    for index, (filters, kernel) in enumerate(ENCODER_LAYERS, start=1):
        x = keras.layers.Conv2D(
            filters, kernel, strides=STRIDE, padding="same", activation="relu", name=f"e{index}"
        )(x)
    x = keras.layers.Flatten(name="flatten")(x)
    x = keras.layers.Dense(HIDDEN, activation="relu", name=f"e{len(ENCODER_LAYERS) + 1}")(x)
    heads = [keras.layers.Dense(latent_dim, name=output, dtype="float32")(x) for output in OUTPUTS]
    return keras.Model(images, heads, name=name)


def bernoulli_decoder(
    latent_dim: int = 10, output_shape: tuple[int, int, int] = (64, 64, 3), name: str = "decoder"
) -> keras.Model:
    """p(x | z), ``deconv_decoder``: z [B, latent_dim] -> pixel logits [B, 64, 64, C] float32."""
    check_shape(output_shape, name)
    z = keras.Input(shape=(latent_dim,), name="z")
    x = keras.layers.Dense(HIDDEN, activation="relu", name="d1")(z)
    x = keras.layers.Dense(DECODER_MAP[0] * DECODER_MAP[1] * DECODER_MAP[2], activation="relu", name="d2")(x)
    x = keras.layers.Reshape(DECODER_MAP, name="map")(x)
    for index, filters in enumerate(DECODER_LAYERS, start=3):
        x = keras.layers.Conv2DTranspose(
            filters, KERNEL, strides=STRIDE, padding="same", activation="relu", name=f"d{index}"
        )(x)
    logits = keras.layers.Conv2DTranspose(
        output_shape[-1],
        KERNEL,
        strides=STRIDE,
        padding="same",
        dtype="float32",
        name=f"d{len(DECODER_LAYERS) + 3}",
    )(x)
    return keras.Model(z, logits, name=name)


def mean_network(posterior: keras.Model, name: str = "encoder") -> keras.Model:
    """images -> the posterior's means [B, latent_dim], the representation evaluators embed with."""
    return keras.Model(posterior.inputs, posterior.outputs[0], name=name)
