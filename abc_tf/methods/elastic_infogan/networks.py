"""InfoGAN's MNIST networks, as Elastic-InfoGAN uses them (docs/PAPERS.md section P3).

Source: InfoGAN's architecture, from the supplement's L176-181 and the authors' code.

- ``infogan_generator`` G: [z (62), c (10)] -> FC 1024 BN ReLU -> FC 128*7*7 BN ReLU -> 4x4
  stride-2 transposed conv 64 BN ReLU -> 4x4 stride-2 transposed conv 1, tanh, mapped to [0, 1].
- ``infogan_trunk``, shared by D and Q: images mapped to [-1, 1], InfoGAN's range -> 4x4 stride-2
  conv 64 LReLU 0.2 -> 4x4 stride-2 conv 128 BN LReLU -> FC 1024 BN LReLU.
- ``infogan_d_head``: FC 1, the real/fake logit. The sigmoid is in the loss.
- ``infogan_q_features``: FC 128 BN LReLU. NT-Xent compares its output after the leaky ReLU (supplement 4.4).
- ``infogan_q_logits``: FC 10, the logits of the categorical code.

Kernels start from N(0, 0.02) and biases from zero, as in the authors' code (``INIT_STDDEV``). Outputs are
float32 under mixed precision. The batch normalisations are ``synchronized``: they use the global batch.
"""

from __future__ import annotations

import keras

from models.architectures import register

NOISE_DIM, NUM_CATEGORIES = 62, 10
IMAGE_SHAPE = (28, 28, 1)
LEAK = 0.2
TRUNK_UNITS, Q_UNITS = 1024, 128
KERNEL, STRIDE = 4, 2
# The authors' initialisation [code: utils.initialize_weights, applied to every network]: each
# convolution, transposed convolution and fully connected kernel N(0, 0.02), biases zero; batch
# normalisation keeps PyTorch's start (scale 1, offset 0), which is Keras's.
INIT_STDDEV = 0.02


def _weights() -> keras.initializers.Initializer:
    """A new N(0, INIT_STDDEV) kernel initializer for each layer.

    An unseeded Keras initializer takes its seed when made. One shared instance would give every
    layer the same values.
    """
    return keras.initializers.RandomNormal(0.0, INIT_STDDEV)


@register("infogan_generator")
def infogan_generator(noise_dim: int = NOISE_DIM, num_categories: int = NUM_CATEGORIES) -> keras.Model:
    """G: the concatenation [z, c] [B, noise_dim + num_categories] -> images [B, 28, 28, 1] in [0, 1]."""
    inputs = keras.Input(shape=(noise_dim + num_categories,), name="z_and_code")
    x = keras.layers.Dense(1024, use_bias=False, kernel_initializer=_weights(), name="fc1")(inputs)
    x = keras.layers.ReLU()(keras.layers.BatchNormalization(synchronized=True, name="bn1")(x))
    x = keras.layers.Dense(128 * 7 * 7, use_bias=False, kernel_initializer=_weights(), name="fc2")(x)
    x = keras.layers.ReLU()(keras.layers.BatchNormalization(synchronized=True, name="bn2")(x))
    x = keras.layers.Reshape((7, 7, 128))(x)
    x = keras.layers.Conv2DTranspose(
        64,
        KERNEL,
        strides=STRIDE,
        padding="same",
        use_bias=False,
        kernel_initializer=_weights(),
        name="upconv1",
    )(x)
    x = keras.layers.ReLU()(keras.layers.BatchNormalization(synchronized=True, name="bn3")(x))
    x = keras.layers.Conv2DTranspose(
        1,
        KERNEL,
        strides=STRIDE,
        padding="same",
        activation="tanh",
        kernel_initializer=_weights(),
        name="upconv2",
        dtype="float32",
    )(x)
    outputs = keras.layers.Rescaling(0.5, offset=0.5, name="to_unit_range", dtype="float32")(
        x
    )  # [-1, 1] -> [0, 1]
    return keras.Model(inputs, outputs, name="generator")


@register("infogan_trunk")
def infogan_trunk(input_shape: tuple[int, int, int] = IMAGE_SHAPE) -> keras.Model:
    """The shared D/Q trunk: images [B, 28, 28, 1] in [0, 1] -> [B, 1024]."""
    inputs = keras.Input(shape=tuple(input_shape), name="images")
    x = keras.layers.Rescaling(2.0, offset=-1.0, name="to_tanh_range")(inputs)  # as the generator's tanh
    x = keras.layers.Conv2D(
        64, KERNEL, strides=STRIDE, padding="same", kernel_initializer=_weights(), name="conv1"
    )(x)
    x = keras.layers.LeakyReLU(LEAK)(x)
    x = keras.layers.Conv2D(
        128,
        KERNEL,
        strides=STRIDE,
        padding="same",
        use_bias=False,
        kernel_initializer=_weights(),
        name="conv2",
    )(x)
    x = keras.layers.LeakyReLU(LEAK)(keras.layers.BatchNormalization(synchronized=True, name="bn1")(x))
    x = keras.layers.Flatten()(x)
    x = keras.layers.Dense(TRUNK_UNITS, use_bias=False, kernel_initializer=_weights(), name="fc")(x)
    outputs = keras.layers.LeakyReLU(LEAK)(keras.layers.BatchNormalization(synchronized=True, name="bn2")(x))
    return keras.Model(inputs, outputs, name="trunk")


@register("infogan_d_head")
def infogan_d_head() -> keras.Model:
    """D's own layer: trunk features [B, 1024] -> the real/fake logit [B, 1], float32."""
    inputs = keras.Input(shape=(TRUNK_UNITS,), name="features")
    logit = keras.layers.Dense(1, kernel_initializer=_weights(), name="logit", dtype="float32")(inputs)
    return keras.Model(inputs, logit, name="d_head")


@register("infogan_q_features")
def infogan_q_features() -> keras.Model:
    """Q's penultimate layer: trunk features [B, 1024] -> [B, 128], float32, after the leaky ReLU."""
    inputs = keras.Input(shape=(TRUNK_UNITS,), name="features")
    x = keras.layers.Dense(Q_UNITS, use_bias=False, kernel_initializer=_weights(), name="fc")(inputs)
    x = keras.layers.BatchNormalization(synchronized=True, name="bn")(x)
    outputs = keras.layers.LeakyReLU(LEAK, dtype="float32")(x)
    return keras.Model(inputs, outputs, name="q_features")


@register("infogan_q_logits")
def infogan_q_logits(num_categories: int = NUM_CATEGORIES) -> keras.Model:
    """Q's last layer: its features [B, 128] -> code logits [B, num_categories], float32."""
    inputs = keras.Input(shape=(Q_UNITS,), name="q_features")
    logits = keras.layers.Dense(
        num_categories, kernel_initializer=_weights(), name="logits", dtype="float32"
    )(inputs)
    return keras.Model(inputs, logits, name="q_logits")


def chain(first: keras.Model, second: keras.Model, name: str) -> keras.Model:
    """``second(first(x))`` as one model sharing both networks' weights.

    E.g. the encoder: images -> trunk -> Q's features.
    """
    inputs = keras.Input(shape=first.input_shape[1:], name="images")
    return keras.Model(inputs, second(first(inputs)), name=name)
