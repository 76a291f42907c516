"""The networks of CC-VAE on MNIST (Jha et al., ECCV 2018; docs/PAPERS.md section P5).

Sized as the authors' PyTorch code, rewritten in Keras.
Source: github.com/ananyahjha93/cycle-consistent-vae at 6ecdfe5, networks.py.
Widths are given for ``base_channels`` b = 16, the authors' value.

Instance norm is PyTorch's ``InstanceNorm2d`` default: epsilon 1e-5, no affine parameters.
Keras' ``GroupNormalization`` with one group per channel matches it. The authors' layers also keep
running statistics, which PyTorch uses only after ``.eval()``. Their training code never calls it,
so every pass normalises each image by its own statistics. We do the same at test time [ours].

Initial weights follow the authors' ``weights_init`` (utils.py L30-39, applied in training.py L23-27):
convolutions and linear layers N(0, 0.05^2), biases zero. It does not reach the transposed
convolutions, since ``ConvTranspose2d`` is no ``Conv2d``. Those keep PyTorch 0.4.0's default
(README.md): weight and bias U(-1/sqrt(n), 1/sqrt(n)), n = input channels x 4 x 4. That default is
as we recall ``_ConvNd.reset_parameters``, unchecked against PyTorch's source [ours].
Inputs are float32 images in [0, 1]; every output is float32.
"""

from __future__ import annotations

import math

import keras

from models.architectures import register

IMAGE_SIZE = 28  # the authors' MNIST networks: 28 -> 13 -> 6 -> 2 and back
BASE_CHANNELS = 16  # networks.py L19, L24, L29: 16, 32, 64
ENCODER_OUTPUTS = ("style_mean", "style_log_variance", "class_code")
INIT_STDDEV = 0.05  # utils.py L32, L38
NORM_EPSILON = 1e-5  # PyTorch's InstanceNorm2d default
LEAKY_SLOPE = 0.2  # networks.py L66, L71, L79-80


def _normal() -> keras.initializers.Initializer:
    return keras.initializers.RandomNormal(stddev=INIT_STDDEV)


def _instance_norm(name: str) -> keras.layers.Layer:
    return keras.layers.GroupNormalization(
        groups=-1, epsilon=NORM_EPSILON, center=False, scale=False, name=name
    )


def _transposed(filters: int, in_channels: int, name: str, **kwargs) -> keras.layers.Conv2DTranspose:
    """A 4 x 4, stride 2, unpadded transposed convolution with PyTorch 0.4's default init."""
    limit = 1.0 / math.sqrt(in_channels * 4 * 4)
    uniform = keras.initializers.RandomUniform(-limit, limit)
    return keras.layers.Conv2DTranspose(
        filters,
        4,
        strides=2,
        padding="valid",
        kernel_initializer=uniform,
        bias_initializer=uniform,
        name=name,
        **kwargs,
    )


def _check_shape(shape: tuple[int, int, int]) -> None:
    if tuple(shape[:2]) != (IMAGE_SIZE, IMAGE_SIZE):
        raise ValueError(
            f"CC-VAE's networks are the authors' MNIST networks for {IMAGE_SIZE} x {IMAGE_SIZE} images, "
            f"not {tuple(shape)}."
        )


@register("cc_vae_encoder")
def cc_vae_encoder(
    style_dim: int = 16,
    class_dim: int = 16,
    base_channels: int = BASE_CHANNELS,
    input_shape: tuple[int, int, int] = (28, 28, 1),
    model_name: str = "posterior",
) -> keras.Model:
    """q(z | x) and the specified code: images [B, 28, 28, C] -> the three :data:`ENCODER_OUTPUTS`, float32.

    Outputs are [style_mean, style_log_variance, class_code]: [B, d_z], [B, d_z], [B, d_s].
    Three 5 x 5 convolutions, stride 2, zero padding 1, of b, 2b, 4b channels: 28 -> 13 -> 6 -> 2.
    Each is followed by an instance norm without scale or offset and a ReLU (networks.py L17-32).
    The 4b x 2 x 2 = 256 features are flattened into three linear heads: the unspecified (style)
    code's mean and log-variance, and the deterministic specified (class) code (networks.py L34-49).
    """
    _check_shape(input_shape)
    inputs = keras.Input(shape=tuple(input_shape), name="images")
    x = inputs
    for index, width in enumerate((base_channels, 2 * base_channels, 4 * base_channels), start=1):
        x = keras.layers.ZeroPadding2D(1, name=f"pad_{index}")(x)
        x = keras.layers.Conv2D(
            width,
            5,
            strides=2,
            padding="valid",
            kernel_initializer=_normal(),
            bias_initializer="zeros",
            name=f"conv_{index}",
        )(x)
        x = _instance_norm(f"norm_{index}")(x)
        x = keras.layers.ReLU(name=f"relu_{index}")(x)
    features = keras.layers.Flatten(name="flatten")(x)
    dims = {"style_mean": style_dim, "style_log_variance": style_dim, "class_code": class_dim}
    outputs = [
        keras.layers.Dense(
            dims[name], kernel_initializer=_normal(), bias_initializer="zeros", name=name, dtype="float32"
        )(features)
        for name in ENCODER_OUTPUTS
    ]
    return keras.Model(inputs, outputs, name=model_name)


@register("cc_vae_decoder")
def cc_vae_decoder(
    style_dim: int = 16,
    class_dim: int = 16,
    base_channels: int = BASE_CHANNELS,
    output_shape: tuple[int, int, int] = (28, 28, 1),
    model_name: str = "decoder",
) -> keras.Model:
    """p(x | z, s): [style [B, d_z], class [B, d_s]] -> images [B, 28, 28, C] in [0, 1], float32.

    Each code goes through its own linear layer of 4b x 2 x 2 units and a leaky ReLU 0.2. They join into
    a 2 x 2 map of 8b channels (networks.py L56-60, L78-84). The authors view their 512 joined features
    channels-first; we reshape channels-last. The orders differ by a fixed permutation of the two linear
    layers' units, which are initialised alike, so both give the same network family.
    Transposed convolutions 4 x 4, stride 2, follow: 2b and b channels with padding 0, each with an
    instance norm and a leaky ReLU 0.2. The last has C channels, padding 1 and a sigmoid.
    Padding 1 crops one row and column per side: 2 -> 6 -> 14 -> 28 (networks.py L62-76).
    """
    _check_shape(output_shape)
    style = keras.Input(shape=(style_dim,), name="style")
    specified = keras.Input(shape=(class_dim,), name="class")
    units = 4 * base_channels * 2 * 2
    inputs = []
    for name, code in (("style", style), ("class", specified)):
        hidden = keras.layers.Dense(
            units, kernel_initializer=_normal(), bias_initializer="zeros", name=f"{name}_input"
        )(code)
        inputs.append(keras.layers.LeakyReLU(LEAKY_SLOPE, name=f"{name}_relu")(hidden))
    joined = keras.layers.Concatenate(name="codes")(inputs)
    x = keras.layers.Reshape((2, 2, 8 * base_channels), name="map")(joined)
    in_channels = 8 * base_channels
    for index, width in enumerate((2 * base_channels, base_channels), start=1):
        x = _transposed(width, in_channels, f"deconv_{index}")(x)
        x = _instance_norm(f"deconv_norm_{index}")(x)
        x = keras.layers.LeakyReLU(LEAKY_SLOPE, name=f"deconv_relu_{index}")(x)
        in_channels = width
    x = _transposed(output_shape[-1], in_channels, "deconv_3")(x)
    x = keras.layers.Cropping2D(1, name="crop")(x)
    images = keras.layers.Activation("sigmoid", name="images", dtype="float32")(x)
    return keras.Model([style, specified], images, name=model_name)


def output_network(posterior: keras.Model, output: str, name: str) -> keras.Model:
    """Images -> one output of ``posterior``, ``"style_mean"`` or ``"class_code"``, sharing its weights."""
    inputs = keras.Input(shape=posterior.input_shape[1:], name="images")
    return keras.Model(inputs, posterior(inputs)[ENCODER_OUTPUTS.index(output)], name=name)
