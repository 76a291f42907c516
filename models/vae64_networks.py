"""The 64 x 64 networks of ML-VAE and CC-VAE.

ABC supplement L217: "we followed the encoder and decoder specifications for the 64x64 RGB images in
the Supplemental for [CC-VAE, arXiv 1804.10469] for both methods". That supplement is not among our
sources. The authors' repository (github.com/ananyahjha93/cycle-consistent-vae at 6ecdfe5) has only
its MNIST networks; issue #2 there says the 2D Sprites and LineMod networks are not included.
So every size here is ours [ours]: a plain DCGAN-like pair, four stride-2 convolutions down to 4 x 4
and four transposed convolutions back. The style follows the authors' MNIST networks in
``models/cc_vae_networks.py``: instance norms, ReLU in the encoder, leaky ReLU 0.2 in the decoder,
one linear layer per code into the decoder, linear heads, the same initial weights.
Widths scale with ``base_channels`` b. The pose presets use 32 [ours]: half DCGAN's 64, for CPU cost.

Initial weights follow the CC-VAE authors' ``weights_init``: convolutions and linear layers
N(0, 0.05^2), biases zero. Transposed convolutions get U(+-1/sqrt(n)), n = input channels x 16.
Inputs are float32 images in [0, 1]; every output is float32.
Only 64 x 64 inputs are accepted, any channel count.
"""

from __future__ import annotations

import math

import keras

from models import cc_vae_networks
from models import ml_vae_networks
from models.architectures import register

IMAGE_SIZE = 64  # [ours]: the ABC paper's 64 x 64 (supplement L217)
BASE_CHANNELS = 32  # [ours]
KERNEL, STRIDE = (
    4,
    2,
)  # [ours]: DCGAN's 4 x 4, stride 2, padding 1: each layer halves or doubles the size exactly
WIDTHS = (1, 2, 4, 8)  # [ours]: encoder channels b, 2b, 4b, 8b; the decoder's map 8b, then 4b, 2b, b
SMALLEST = IMAGE_SIZE // STRIDE ** len(WIDTHS)  # 4: the encoder's last map and the decoder's first
INIT_STDDEV = cc_vae_networks.INIT_STDDEV  # 0.05, the CC-VAE authors' weights_init
NORM_EPSILON = cc_vae_networks.NORM_EPSILON  # 1e-5, PyTorch's InstanceNorm2d
LEAKY_SLOPE = cc_vae_networks.LEAKY_SLOPE  # 0.2, the CC-VAE authors' decoder


def _normal() -> keras.initializers.Initializer:
    return keras.initializers.RandomNormal(stddev=INIT_STDDEV)


def _instance_norm(name: str) -> keras.layers.Layer:
    return keras.layers.GroupNormalization(
        groups=-1, epsilon=NORM_EPSILON, center=False, scale=False, name=name
    )


def _dense(units: int, name: str, **kwargs) -> keras.layers.Dense:
    return keras.layers.Dense(
        units, kernel_initializer=_normal(), bias_initializer="zeros", name=name, **kwargs
    )


def _transposed(filters: int, in_channels: int, name: str, **kwargs) -> keras.layers.Conv2DTranspose:
    """A 4 x 4, stride 2, padding 1 transposed convolution, doubling the size; PyTorch 0.4's init."""
    limit = 1.0 / math.sqrt(in_channels * KERNEL * KERNEL)
    uniform = keras.initializers.RandomUniform(-limit, limit)
    return keras.layers.Conv2DTranspose(
        filters,
        KERNEL,
        strides=STRIDE,
        padding="same",
        kernel_initializer=uniform,
        bias_initializer=uniform,
        name=name,
        **kwargs,
    )


def check_shape(shape: tuple[int, ...], what: str) -> None:
    """Raises ValueError unless ``shape`` is (64, 64, C)."""
    if len(shape) != 3 or tuple(shape[:2]) != (IMAGE_SIZE, IMAGE_SIZE):
        raise ValueError(
            f"{what}: the 64 x 64 networks take {IMAGE_SIZE} x {IMAGE_SIZE} images, not {tuple(shape)}."
        )


def _encoder(
    heads: dict[str, int], base_channels: int, input_shape: tuple[int, int, int], model_name: str
) -> keras.Model:
    """The encoder trunk and one linear head per entry of ``heads`` (name -> size), in order.

    Images [B, 64, 64, C] go through four 4 x 4 convolutions, stride 2, padding 1, of b, 2b, 4b, 8b
    channels: 64 -> 32 -> 16 -> 8 -> 4. Keras' ``"same"`` equals padding 1 for an even size.
    Each is followed by an instance norm without scale or offset and a ReLU.
    The 8b x 4 x 4 features are flattened into the heads.
    """
    check_shape(input_shape, model_name)
    inputs = keras.Input(shape=tuple(input_shape), name="images")
    x = inputs
    for index, factor in enumerate(WIDTHS, start=1):
        x = keras.layers.Conv2D(
            factor * base_channels,
            KERNEL,
            strides=STRIDE,
            padding="same",
            kernel_initializer=_normal(),
            bias_initializer="zeros",
            name=f"conv_{index}",
        )(x)
        x = _instance_norm(f"norm_{index}")(x)
        x = keras.layers.ReLU(name=f"relu_{index}")(x)
    features = keras.layers.Flatten(name="flatten")(x)
    outputs = [_dense(size, name, dtype="float32")(features) for name, size in heads.items()]
    return keras.Model(inputs, outputs, name=model_name)


def _decoder_trunk(
    codes: list[keras.KerasTensor], names: tuple[str, str], base_channels: int
) -> keras.KerasTensor:
    """Two codes -> the 32 x 32 map of b channels before the last transposed convolution.

    Each code goes through its own linear layer of 4b x 4 x 4 units and a leaky ReLU 0.2. They join into
    a 4 x 4 map of 8b channels. Three 4 x 4 transposed convolutions, stride 2, padding 1, of 4b, 2b, b
    channels follow, each with an instance norm and a leaky ReLU 0.2: 4 -> 8 -> 16 -> 32.
    """
    units = WIDTHS[-1] * base_channels // 2 * SMALLEST * SMALLEST
    joined = []
    for name, code in zip(names, codes):
        hidden = _dense(units, f"{name}_input")(code)
        joined.append(keras.layers.LeakyReLU(LEAKY_SLOPE, name=f"{name}_relu")(hidden))
    x = keras.layers.Concatenate(name="codes")(joined)
    in_channels = WIDTHS[-1] * base_channels
    x = keras.layers.Reshape((SMALLEST, SMALLEST, in_channels), name="map")(x)
    for index, factor in enumerate(reversed(WIDTHS[:-1]), start=1):
        width = factor * base_channels
        x = _transposed(width, in_channels, f"deconv_{index}")(x)
        x = _instance_norm(f"deconv_norm_{index}")(x)
        x = keras.layers.LeakyReLU(LEAKY_SLOPE, name=f"deconv_relu_{index}")(x)
        in_channels = width
    return x


LAST = f"deconv_{len(WIDTHS)}"  # the last transposed convolution, 32 -> 64


@register("ml_vae_encoder_64")
def ml_vae_encoder_64(
    style_dim: int = 10,
    content_dim: int = 10,
    base_channels: int = BASE_CHANNELS,
    input_shape: tuple[int, int, int] = (64, 64, 3),
    model_name: str = "posterior",
) -> keras.Model:
    """ML-VAE's q(s | x) and q(c | x) at 64 x 64: images -> ``ml_vae_networks.ENCODER_OUTPUTS``.

    Those are style mean and log-variance and content mean and log-variance, all float32.
    """
    dims = {"style": style_dim, "content": content_dim}
    heads = {name: dims[name.split("_")[0]] for name in ml_vae_networks.ENCODER_OUTPUTS}
    return _encoder(heads, base_channels, input_shape, model_name)


@register("ml_vae_decoder_64")
def ml_vae_decoder_64(
    style_dim: int = 10,
    content_dim: int = 10,
    base_channels: int = BASE_CHANNELS,
    output_shape: tuple[int, int, int] = (64, 64, 3),
    likelihood: str = "gaussian",
    model_name: str = "decoder",
) -> keras.Model:
    """ML-VAE's p(x | s, c) at 64 x 64: [style, content] -> [B, 64, 64, C] float32.

    For the ``gaussian`` likelihood, two last transposed convolutions of C channels give the mean (linear)
    and the log-variance (tanh), as the authors' MNIST heads. For ``bernoulli``, one gives the pixel logits.
    """
    check_shape(output_shape, model_name)
    if likelihood not in ("gaussian", "bernoulli"):
        raise ValueError(f"Unknown likelihood {likelihood!r}; choose gaussian or bernoulli.")
    style = keras.Input(shape=(style_dim,), name="style")
    content = keras.Input(shape=(content_dim,), name="content")
    x = _decoder_trunk([style, content], ("style", "content"), base_channels)
    channels = output_shape[-1]
    if likelihood == "bernoulli":
        logits = _transposed(channels, base_channels, "pixel_logits", dtype="float32")(x)
        return keras.Model([style, content], logits, name=model_name)
    mean = _transposed(channels, base_channels, "pixel_mean", dtype="float32")(x)
    log_variance = _transposed(
        channels, base_channels, "pixel_log_variance", activation="tanh", dtype="float32"
    )(x)
    return keras.Model([style, content], [mean, log_variance], name=model_name)


@register("cc_vae_encoder_64")
def cc_vae_encoder_64(
    style_dim: int = 16,
    class_dim: int = 16,
    base_channels: int = BASE_CHANNELS,
    input_shape: tuple[int, int, int] = (64, 64, 3),
    model_name: str = "posterior",
) -> keras.Model:
    """CC-VAE's q(z | x) and specified code at 64 x 64: images -> ``cc_vae_networks.ENCODER_OUTPUTS``.

    Those are the style mean and log-variance and the deterministic class code, all float32.
    """
    dims = {"style_mean": style_dim, "style_log_variance": style_dim, "class_code": class_dim}
    return _encoder(
        {name: dims[name] for name in cc_vae_networks.ENCODER_OUTPUTS}, base_channels, input_shape, model_name
    )


@register("cc_vae_decoder_64")
def cc_vae_decoder_64(
    style_dim: int = 16,
    class_dim: int = 16,
    base_channels: int = BASE_CHANNELS,
    output_shape: tuple[int, int, int] = (64, 64, 3),
    model_name: str = "decoder",
) -> keras.Model:
    """CC-VAE's p(x | z, s) at 64 x 64: [style, class] -> images [B, 64, 64, C] in [0, 1], float32.

    A last transposed convolution of C channels and a sigmoid, as the authors' MNIST decoder.
    """
    check_shape(output_shape, model_name)
    style = keras.Input(shape=(style_dim,), name="style")
    specified = keras.Input(shape=(class_dim,), name="class")
    x = _decoder_trunk([style, specified], ("style", "class"), base_channels)
    x = _transposed(output_shape[-1], base_channels, LAST)(x)
    images = keras.layers.Activation("sigmoid", name="images", dtype="float32")(x)
    return keras.Model([style, specified], images, name=model_name)
