"""The networks of CC-VAE on MNIST (Jha et al., ECCV 2018; docs/PAPERS.md section P5), sized as the
authors' PyTorch code (github.com/ananyahjha93/cycle-consistent-vae, networks.py at 6ecdfe5;
written anew here in Keras). Widths are given for ``base_channels`` b = 16, the authors':

- ``cc_vae_encoder``: images [B, 28, 28, C] -> [style_mean, style_log_variance, class_code],
  [B, d_z], [B, d_z], [B, d_s]: three convolutions 5 x 5, stride 2, zero padding 1, of b, 2b,
  4b channels, each followed by an instance normalisation without scale or offset and a ReLU
  (28 -> 13 -> 6 -> 2; networks.py L17-32), flattened (4b x 2 x 2 = 256 features), then three
  linear heads: the unspecified (style) code's mean and log-variance and the deterministic
  specified (class) code (networks.py L34-39, L41-49).
- ``cc_vae_decoder``: [style [B, d_z], class [B, d_s]] -> images [B, 28, 28, C] in [0, 1]:
  each code through its own linear layer of 4b x 2 x 2 units and a leaky ReLU (slope 0.2),
  joined into a 2 x 2 map of 8b channels (networks.py L56-60, L78-84), then transposed
  convolutions 4 x 4, stride 2, of 2b and b channels (padding 0; each with an instance
  normalisation and a leaky ReLU 0.2) and of C channels (padding 1, i.e. one row and column
  cropped on each side) with a sigmoid (2 -> 6 -> 14 -> 28; networks.py L62-76).

Instance normalisation is PyTorch's ``InstanceNorm2d`` default (epsilon 1e-5, no affine
parameters): Keras' ``GroupNormalization`` with one group per channel. The authors' layers also
keep running statistics (``track_running_stats=True``), which PyTorch uses only after
``.eval()``; their training code never calls it, so every pass normalises each image by its own
statistics, as here at training and at test time [ours: the test-time choice].

The authors' 512 joined features are viewed as a [128, 2, 2] map in PyTorch's channels-first
order; we reshape them channels-last. The two orders differ by a fixed permutation of the two
linear layers' units, which are initialised alike, so they are the same network family.

Initial weights as the authors' ``weights_init`` (utils.py L30-39, applied in training.py
L23-27): convolutions and linear layers N(0, 0.05^2), biases zero. It does not reach the
transposed convolutions (``ConvTranspose2d`` is no ``Conv2d``), which keep the default of the
PyTorch they ran (0.4.0, README.md): weight and bias U(-1/sqrt(n), 1/sqrt(n)), n = the layer's
input channels x 4 x 4 (PyTorch's ``_ConvNd.reset_parameters`` as we recall it; not checked
against PyTorch's source here [ours]). Inputs are float32 images in [0, 1]; every output is float32.
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
    """q(z | x) and the specified code: images -> the three outputs of :data:`ENCODER_OUTPUTS` (float32)."""
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
    """p(x | z, s): [style, class] -> images [B, 28, 28, C] in [0, 1] (sigmoid; float32)."""
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
    """Images -> one output of ``posterior`` (``"style_mean"`` or ``"class_code"``), sharing its weights."""
    inputs = keras.Input(shape=posterior.input_shape[1:], name="images")
    return keras.Model(inputs, posterior(inputs)[ENCODER_OUTPUTS.index(output)], name=name)
