"""The networks of ML-VAE on MNIST (Bouchacourt et al., AAAI 2018; docs/PAPERS.md section P5).

Sized as the authors' PyTorch code, rewritten in Keras.
Source: github.com/DianeBouchacourt/multi-level-vae at 6de7264, networks.py.

- ``ml_vae_encoder``: images [B, H, W, C] -> [style_mean, style_log_variance, content_mean,
  content_log_variance], each [B, d]. The flattened image goes through one dense layer of 500 tanh
  units, then four linear heads (networks.py L16-34).
- ``ml_vae_decoder``: [style [B, d_s], content [B, d_c]] -> the pixel distribution's parameters,
  each [B, H, W, C]. The codes are concatenated into one dense layer of 500 tanh units (L43-50).
  For the ``gaussian`` likelihood: a linear mean and a tanh-squashed log-variance (L44-52).
  For ``bernoulli``: the pixel logits, one linear head like the Gaussian mean [ours].

Initial weights follow the authors' ``weights_init`` (utils.py L147-172): every weight and bias
from N(0, 1 / fan_in). PyTorch's fan_in of a bias vector is its length.
``mean_network`` gives a code's mean from an image, for the models a run keeps.
Inputs are float32 images in [0, 1]; every output is float32.
"""

from __future__ import annotations

import math

import keras

from models.architectures import register

HIDDEN_UNITS = 500  # networks.py L16, L43
ENCODER_OUTPUTS = ("style_mean", "style_log_variance", "content_mean", "content_log_variance")


def _lecun_normal(fan_in: int) -> keras.initializers.Initializer:
    """N(0, 1 / fan_in), untruncated, as the authors' lecun_normal_."""
    return keras.initializers.RandomNormal(stddev=1.0 / math.sqrt(fan_in))


def _dense(units: int, fan_in: int, name: str, **kwargs) -> keras.layers.Dense:
    return keras.layers.Dense(
        units,
        kernel_initializer=_lecun_normal(fan_in),
        bias_initializer=_lecun_normal(units),
        name=name,
        **kwargs,
    )


@register("ml_vae_encoder")
def ml_vae_encoder(
    style_dim: int = 10,
    content_dim: int = 10,
    units: int = HIDDEN_UNITS,
    input_shape: tuple[int, int, int] = (28, 28, 1),
    model_name: str = "posterior",
) -> keras.Model:
    """q(s | x) and q(c | x): images -> the four outputs of :data:`ENCODER_OUTPUTS`, float32."""
    inputs = keras.Input(shape=tuple(input_shape), name="images")
    flat = keras.layers.Flatten(name="flatten")(inputs)
    hidden = _dense(units, math.prod(input_shape), "hidden", activation="tanh")(flat)
    dims = {"style": style_dim, "content": content_dim}
    outputs = [
        _dense(dims[name.split("_")[0]], units, name, dtype="float32")(hidden) for name in ENCODER_OUTPUTS
    ]
    return keras.Model(inputs, outputs, name=model_name)


@register("ml_vae_decoder")
def ml_vae_decoder(
    style_dim: int = 10,
    content_dim: int = 10,
    units: int = HIDDEN_UNITS,
    output_shape: tuple[int, int, int] = (28, 28, 1),
    likelihood: str = "gaussian",
    model_name: str = "decoder",
) -> keras.Model:
    """p(x | s, c): [style, content] -> [B, H, W, C] float32.

    Gives [mean, log_variance] for the gaussian likelihood, or pixel logits for bernoulli.
    """
    style = keras.Input(shape=(style_dim,), name="style")
    content = keras.Input(shape=(content_dim,), name="content")
    joined = keras.layers.Concatenate(name="codes")([style, content])
    hidden = _dense(units, style_dim + content_dim, "hidden", activation="tanh")(joined)
    pixels = math.prod(output_shape)

    def image(values, name: str):
        return keras.layers.Reshape(tuple(output_shape), name=name, dtype="float32")(values)

    if likelihood == "bernoulli":
        logits = _dense(pixels, units, "pixel_logits", dtype="float32")(hidden)
        return keras.Model([style, content], image(logits, "logits"), name=model_name)
    if likelihood != "gaussian":
        raise ValueError(f"Unknown likelihood {likelihood!r}; choose gaussian or bernoulli.")
    mean = _dense(pixels, units, "pixel_mean", dtype="float32")(hidden)
    log_variance = _dense(pixels, units, "pixel_log_variance", activation="tanh", dtype="float32")(hidden)
    return keras.Model(
        [style, content], [image(mean, "mean"), image(log_variance, "log_variance")], name=model_name
    )


def mean_network(posterior: keras.Model, output: str, name: str) -> keras.Model:
    """Images -> one output of ``posterior``, ``"style_mean"`` or ``"content_mean"``, sharing its weights."""
    inputs = keras.Input(shape=posterior.input_shape[1:], name="images")
    return keras.Model(inputs, posterior(inputs)[ENCODER_OUTPUTS.index(output)], name=name)
