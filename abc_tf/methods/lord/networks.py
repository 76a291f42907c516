"""The networks of LORD: Gabbay and Hoshen, ICLR 2020 (docs/PAPERS.md section P5).

Sized as the authors' TensorFlow/Keras code (github.com/avivga/lord at d817d59, model/network.py,
"network.py" below), written anew in Keras 3; widths are for ``base_channels`` b = 64, the authors'.
AdaIN (network.py L369-389) runs in float32, since its 1e-7 is below float16's resolution. Leaky ReLUs,
kernels and biases have Keras' defaults, as the authors'. Every network returns float32.
"""

from __future__ import annotations

import keras
from keras import ops

import models
from abc_tf.config import ExperimentConfig
from models.architectures import register

LEAKY_SLOPE = 0.3  # keras.layers.LeakyReLU's default alpha, the authors' (network.py L247 and on)
ADAIN_EPSILON = 1e-7  # network.py L387
VGG_LAYERS = (
    "block1_conv2",
    "block2_conv2",
    "block3_conv2",
    "block4_conv3",
    "block5_pool",
)  # indices 2, 5, 8, 13, 18
VGG_LAYER_INDICES = (2, 5, 8, 13, 18)  # lord config.py L12


@keras.saving.register_keras_serializable(package="abc_tf")
class AdaptiveInstanceNorm(keras.layers.Layer):
    """[features [B, H, W, C], parameters [B, 2C] of C interleaved (offset, scale) pairs] -> features
    standardised per image and channel (biased variance), times the scale plus the offset."""

    def call(self, inputs):
        features, parameters = inputs
        x = ops.cast(features, "float32")
        pairs = ops.reshape(ops.cast(parameters, "float32"), (-1, 1, 1, x.shape[-1], 2))
        mean, variance = ops.moments(x, axes=(1, 2), keepdims=True)
        standard = (x - mean) / (ops.sqrt(variance) + ADAIN_EPSILON)
        return ops.cast(standard * pairs[..., 1] + pairs[..., 0], self.compute_dtype)

    def compute_output_shape(self, input_shape):
        return input_shape[0]


@keras.saving.register_keras_serializable(package="abc_tf")
class NearestUpsample(keras.layers.Layer):
    """x2 nearest-neighbour upsampling, the same values as ``keras.layers.UpSampling2D(2)``.

    It is made of concatenations and static reshapes. UpSampling2D's repeat has a gradient that
    XLA cannot compile inside a ``tf.cond``, and LORD's stage switch is one.
    """

    def call(self, x):
        height, width, channels = x.shape[1:]
        rows = ops.reshape(ops.concatenate([x, x], axis=-1), (-1, height, 1, 2 * width, channels))
        return ops.reshape(ops.concatenate([rows, rows], axis=2), (-1, 2 * height, 2 * width, channels))

    def compute_output_shape(self, input_shape):
        batch, height, width, channels = input_shape
        return (batch, 2 * height, 2 * width, channels)


def _leaky(name: str) -> keras.layers.Layer:
    return keras.layers.LeakyReLU(negative_slope=LEAKY_SLOPE, name=name)


def check_image_shape(shape: tuple[int, int, int], n_adain_layers: int) -> None:
    """ValueError unless the generator can make images of ``shape``: height and width multiples of 2^n."""
    factor = 2**n_adain_layers
    if shape[0] % factor or shape[1] % factor:
        raise ValueError(
            f"LORD's generator doubles a {factor}-times smaller map {n_adain_layers} times: the image height "
            f"and width must be multiples of {factor}, not {tuple(shape)}."
        )


@register("lord_generator")
def lord_generator(
    content_dim: int = 128,
    class_dim: int = 256,
    n_adain_layers: int = 4,
    adain_dim: int = 256,
    base_channels: int = 64,
    output_shape: tuple[int, int, int] = (64, 64, 3),
    model_name: str = "generator",
) -> keras.Model:
    """[content code [B, d_c], class code [B, d_y]] -> images [B, H, W, C] in [0, 1].

    - Modulation: per AdaIN layer, one linear layer of 2 x adain_dim units, read as adain_dim
      (offset, scale) pairs. Source: network.py L223-236; their reshape to [n, adain_dim, 2] puts
      the offset at index 0 and the scale at 1 (L379-380).
    - Content: three linear layers of h w adain_dim / 8, h w adain_dim / 4 and h w adain_dim
      units, each with a leaky ReLU, reshaped to [h, w, adain_dim] (L243-255). Here h = H / 2^n
      and w = W / 2^n.
    - n times: x2 nearest upsampling (:class:`NearestUpsample`), a 3 x 3 convolution of adain_dim
      channels, a leaky ReLU, and AdaIN with that layer's parameters (L257-262).
    - Output: a 5 x 5 convolution of b channels with a leaky ReLU, then a 7 x 7 convolution of C
      channels with a sigmoid (L264-268).

    The authors' separate ``class_modulation`` trains with the generator in both stages: here, part of it.
    """
    check_image_shape(output_shape, n_adain_layers)
    height, width = output_shape[0] // 2**n_adain_layers, output_shape[1] // 2**n_adain_layers
    content = keras.Input(shape=(content_dim,), name="content_code")
    class_code = keras.Input(shape=(class_dim,), name="class_code")
    modulation = [
        keras.layers.Dense(2 * adain_dim, name=f"modulation_{i + 1}")(class_code)
        for i in range(n_adain_layers)
    ]
    x = content
    for i, divisor in enumerate((8, 4, 1)):
        x = keras.layers.Dense(height * width * (adain_dim // divisor), name=f"dense_{i + 1}")(x)
        x = _leaky(f"dense_{i + 1}_act")(x)
    x = keras.layers.Reshape((height, width, adain_dim), name="to_map")(x)
    for i in range(n_adain_layers):
        x = NearestUpsample(name=f"upsample_{i + 1}")(x)
        x = keras.layers.Conv2D(adain_dim, 3, padding="same", name=f"conv_{i + 1}")(x)
        x = _leaky(f"conv_{i + 1}_act")(x)
        x = AdaptiveInstanceNorm(name=f"adain_{i + 1}")([x, modulation[i]])
    x = keras.layers.Conv2D(base_channels, 5, padding="same", name="conv_out_1")(x)
    x = _leaky("conv_out_1_act")(x)
    x = keras.layers.Conv2D(output_shape[-1], 7, padding="same", name="conv_out_2")(x)
    images = keras.layers.Activation("sigmoid", dtype="float32", name="images")(x)
    return keras.Model([content, class_code], images, name=model_name)


@register("lord_encoder")
def lord_encoder(
    code_dim: int = 128,
    base_channels: int = 64,
    input_shape: tuple[int, int, int] = (64, 64, 3),
    model_name: str = "encoder",
) -> keras.Model:
    """Images [B, H, W, C] -> a code [B, code_dim], float32.

    A 7 x 7 stride-1 convolution of b channels, then 4 x 4 stride-2 convolutions of 2b, 4b, 4b
    and 4b channels. All use same padding and a leaky ReLU. Then a flatten, two linear layers of
    4b units with leaky ReLUs, and a linear layer of d units.
    Source: network.py L300-366. The content and class encoders are the same network.
    """
    images = keras.Input(shape=tuple(input_shape), name="images")
    b = base_channels
    x = images
    for i, (filters, kernel, stride) in enumerate(
        ((b, 7, 1), (2 * b, 4, 2), (4 * b, 4, 2), (4 * b, 4, 2), (4 * b, 4, 2))
    ):
        x = keras.layers.Conv2D(filters, kernel, strides=stride, padding="same", name=f"conv_{i + 1}")(x)
        x = _leaky(f"conv_{i + 1}_act")(x)
    x = keras.layers.Flatten(name="flatten")(x)
    for i in range(2):
        x = keras.layers.Dense(4 * b, name=f"dense_{i + 1}")(x)
        x = _leaky(f"dense_{i + 1}_act")(x)
    x = keras.layers.Dense(code_dim, name="code_linear")(x)
    code = keras.layers.Activation("linear", dtype="float32", name="code")(x)
    return keras.Model(images, code, name=model_name)


@register("lord_vgg_features")
def lord_vgg_features(weights: str, input_shape: tuple[int, int, int] = (64, 64, 3)) -> keras.Model:
    """Images [B, H, W, 1 or 3] in [0, 1] -> the five VGG16 feature maps of the authors' perceptual
    loss, float32.

    The layers are :data:`VGG_LAYERS` (lord config.py L12), after VGG16's ``preprocess_input`` of images
    scaled to 0-255 (network.py L277-298, L400-407). ``weights``: the Keras no-top ImageNet file; frozen.
    """
    vgg = keras.applications.VGG16(
        include_top=False, weights=weights, input_shape=(input_shape[0], input_shape[1], 3)
    )
    vgg.trainable = False
    images = keras.Input(shape=tuple(input_shape), name="images")
    x = (
        images if input_shape[-1] == 3 else keras.layers.Concatenate(name="to_rgb")([images] * 3)
    )  # network.py L285-286
    x = keras.layers.Lambda(lambda t: keras.applications.vgg16.preprocess_input(t * 255.0), name="vgg_input")(
        x
    )
    features = keras.Model(vgg.inputs, [vgg.get_layer(name).output for name in VGG_LAYERS], name="vgg16")(x)
    return keras.Model(images, [ops.cast(feature, "float32") for feature in features], name="vgg_features")


def build_networks(config: ExperimentConfig, image_shape: tuple[int, int, int]) -> dict[str, keras.Model]:
    """The generator, the two encoders (and the VGG features), in a fixed order."""
    method = config.method
    check_image_shape(image_shape, method.n_adain_layers)
    shape = tuple(image_shape)
    networks = {
        "generator": models.build(
            "lord_generator",
            content_dim=method.content_dim,
            class_dim=method.class_dim,
            n_adain_layers=method.n_adain_layers,
            adain_dim=method.adain_dim,
            base_channels=method.base_channels,
            output_shape=shape,
        ),
        "encoder": models.build(
            "lord_encoder",
            code_dim=method.content_dim,
            base_channels=method.base_channels,
            input_shape=shape,
            model_name="encoder",
        ),
        "class_encoder": models.build(
            "lord_encoder",
            code_dim=method.class_dim,
            base_channels=method.base_channels,
            input_shape=shape,
            model_name="class_encoder",
        ),
    }
    if method.reconstruction == "perceptual":
        networks["vgg"] = models.build("lord_vgg_features", weights=method.vgg_weights, input_shape=shape)
    return networks
