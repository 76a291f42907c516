"""The networks of the VAE and VITAE peers on MNIST (docs/PAPERS.md section P2; supplement Table 1).

- ``gaussian_encoder``: images [B, H, W, C] -> [mean [B, d], variance [B, d]]. Two MLPs with
  LeakyReLU(0.1); the mean's output is linear, the variance's softplus. [ours] The variance gets
  1e-6 added, so the KL term and log-densities stay finite.
- ``bernoulli_decoder``: z [B, d] -> pixel probabilities [B, H, W, C], an MLP with a sigmoid output.
- ``affine_decoder``: z_P [B, d] -> theta [B, 6] of ``models/spatial_transformer.py``, an MLP.
  [ours] Its linear output's weights start at zero, so every transformation starts as the identity.

Table 1's VAE: encoders 128-64-d, decoder 64-64-784, d = 4. VITAE: d = 2 per space and about half
the units (:data:`VITAE_ENCODER_UNITS`, :data:`VITAE_DECODER_UNITS`). The compositions below build
the models a run keeps from the trained networks. Inputs are float32 images in [0, 1].
:func:`build_networks` builds a variant's networks, as its Structure declares.
"""

from __future__ import annotations

import math

import keras

import models
from abc_tf.methods.vae import Structure
from models.architectures import register
from models.spatial_transformer import THETA_DIM, SpatialTransformer

VAE_ENCODER_UNITS, VAE_DECODER_UNITS = (128, 64), (64, 64)
VITAE_ENCODER_UNITS, VITAE_DECODER_UNITS = (64, 32), (32, 32)
LEAKY_SLOPE = 0.1
VARIANCE_FLOOR = 1e-6


def _mlp(x, units: tuple[int, ...], prefix: str):
    for index, width in enumerate(units):
        x = keras.layers.Dense(width, name=f"{prefix}_dense{index + 1}")(x)
        x = keras.layers.LeakyReLU(negative_slope=LEAKY_SLOPE, name=f"{prefix}_leaky{index + 1}")(x)
    return x


@keras.saving.register_keras_serializable(package="abc_tf")
class AddFloor(keras.layers.Layer):
    """x + floor. It keeps a softplus variance away from zero."""

    def __init__(self, floor: float = VARIANCE_FLOOR, **kwargs):
        super().__init__(**kwargs)
        self.floor = float(floor)

    def call(self, inputs):
        return inputs + self.floor

    def get_config(self) -> dict:
        return {**super().get_config(), "floor": self.floor}


@register("gaussian_encoder")
def gaussian_encoder(
    latent_dim: int = 4,
    units: tuple[int, ...] = VAE_ENCODER_UNITS,
    input_shape: tuple[int, int, int] = (28, 28, 1),
    model_name: str = "gaussian_encoder",
) -> keras.Model:
    """q(z | x): images -> [mean [B, d], variance [B, d]], float32."""
    inputs = keras.Input(shape=tuple(input_shape), name="images")
    flat = keras.layers.Flatten(name="flatten")(inputs)
    mean = keras.layers.Dense(latent_dim, name="mean", dtype="float32")(_mlp(flat, tuple(units), "mean"))
    variance = keras.layers.Dense(
        latent_dim, activation="softplus", name="variance_softplus", dtype="float32"
    )(_mlp(flat, tuple(units), "variance"))
    variance = AddFloor(name="variance", dtype="float32")(variance)
    return keras.Model(inputs, [mean, variance], name=model_name)


@register("bernoulli_decoder")
def bernoulli_decoder(
    latent_dim: int = 4,
    units: tuple[int, ...] = VAE_DECODER_UNITS,
    output_shape: tuple[int, int, int] = (28, 28, 1),
    model_name: str = "bernoulli_decoder",
) -> keras.Model:
    """p(x | z): z [B, d] -> pixel probabilities [B, H, W, C], float32, from a sigmoid."""
    inputs = keras.Input(shape=(latent_dim,), name="z")
    x = keras.layers.Dense(math.prod(output_shape), activation="sigmoid", name="pixels", dtype="float32")(
        _mlp(inputs, tuple(units), "decoder")
    )
    outputs = keras.layers.Reshape(tuple(output_shape), name="image", dtype="float32")(x)
    return keras.Model(inputs, outputs, name=model_name)


@register("affine_decoder")
def affine_decoder(
    latent_dim: int = 2, units: tuple[int, ...] = VITAE_DECODER_UNITS, model_name: str = "affine_decoder"
) -> keras.Model:
    """dec_P: z_P [B, d] -> theta [B, 6], starting at theta = 0, the identity."""
    inputs = keras.Input(shape=(latent_dim,), name="z_perspective")
    outputs = keras.layers.Dense(THETA_DIM, kernel_initializer="zeros", name="theta", dtype="float32")(
        _mlp(inputs, tuple(units), "decoder")
    )
    return keras.Model(inputs, outputs, name=model_name)


def mean_of(posterior: keras.Model, name: str) -> keras.Model:
    """Images -> the posterior mean [B, d], sharing ``posterior``'s weights."""
    inputs = keras.Input(shape=posterior.input_shape[1:], name="images")
    return keras.Model(inputs, posterior(inputs)[0], name=name)


def vitae_codes(
    perspective: keras.Model,
    affine: keras.Model,
    appearance: keras.Model,
    conditional: bool,
    output: str,
    name: str,
) -> keras.Model:
    """Images -> VITAE posterior means, sharing the networks' weights.

    ``output`` "appearance" gives z_A [B, d_A]; "encoder" gives [z_A, z_P] [B, d_A + d_P]. With
    ``conditional`` (C-VITAE), z_A is read from x' = T_{-theta}(x), where theta = dec_P(the mean
    of z_P). Else it is read from x.
    It is one flat graph that calls each network once. Keras cannot load a file in which two
    nested models share a third.
    """
    inputs = keras.Input(shape=perspective.input_shape[1:], name="images")
    z_p = perspective(inputs)[0]
    source = SpatialTransformer(inverse=True, name="align")([inputs, affine(z_p)]) if conditional else inputs
    z_a = appearance(source)[0]
    if output == "appearance":
        return keras.Model(inputs, z_a, name=name)
    return keras.Model(inputs, keras.layers.Concatenate(name="codes", dtype="float32")([z_a, z_p]), name=name)


def vitae_generator(
    appearance_decoder: keras.Model, affine: keras.Model, name: str = "decoder"
) -> keras.Model:
    """[z_A [B, d_A], z_P [B, d_P]] -> pixel probabilities [B, H, W, C].

    x^ = T_theta(dec_A(z_A)), with theta = dec_P(z_P).
    """
    z_a = keras.Input(shape=appearance_decoder.input_shape[1:], name="z_appearance")
    z_p = keras.Input(shape=affine.input_shape[1:], name="z_perspective")
    outputs = SpatialTransformer(name="perspective")([appearance_decoder(z_a), affine(z_p)])
    return keras.Model([z_a, z_p], outputs, name=name)


def latent_dims(structure: Structure, embedding_dim: int) -> tuple[int, int]:
    """d_A and d_P. Without a perspective the one space is the "appearance" one."""
    return (embedding_dim // 2, embedding_dim // 2) if structure.perspective else (embedding_dim, 0)


# Networks: the supplement's Table 1 MLPs. VITAE's have about half the units, the same for both
# spaces [ours]. The supplement (L49) says the appearance networks benefit from a little more
# capacity than the perspective ones, without numbers. The authors' released code builds both
# spaces from the same 512-256 MLPs with batch norm.
def build_networks(
    structure: Structure, embedding_dim: int, image_shape: tuple[int, int, int]
) -> dict[str, keras.Model]:
    """The networks of ``losses.infer``, built in a fixed order: one seed, one set of weights."""
    dim_a, dim_p = latent_dims(structure, embedding_dim)
    shape = tuple(image_shape)
    if not structure.perspective:
        return {
            "appearance_posterior": models.build(
                "gaussian_encoder", latent_dim=dim_a, input_shape=shape, model_name="posterior"
            ),
            "appearance_decoder": models.build(
                "bernoulli_decoder", latent_dim=dim_a, output_shape=shape, model_name="decoder"
            ),
        }
    encoder_units, decoder_units = VITAE_ENCODER_UNITS, VITAE_DECODER_UNITS
    return {
        "perspective_posterior": models.build(
            "gaussian_encoder",
            latent_dim=dim_p,
            units=encoder_units,
            input_shape=shape,
            model_name="perspective_posterior",
        ),
        "affine_decoder": models.build("affine_decoder", latent_dim=dim_p, units=decoder_units),
        "appearance_posterior": models.build(
            "gaussian_encoder",
            latent_dim=dim_a,
            units=encoder_units,
            input_shape=shape,
            model_name="appearance_posterior",
        ),
        "appearance_decoder": models.build(
            "bernoulli_decoder",
            latent_dim=dim_a,
            units=decoder_units,
            output_shape=shape,
            model_name="appearance_decoder",
        ),
    }
