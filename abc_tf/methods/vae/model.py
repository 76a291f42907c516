"""The VAE and VITAE peers (``--method=vae``, ``u_vitae``, ``c_vitae``), trained on "images" batches.

VITAE is Detlefsen and Hauberg, NeurIPS 2019 (docs/PAPERS.md section P2). The generative model
is p(x) = integral p(x | z_A, z_P) p(z_A) p(z_P), with standard normal priors and a Bernoulli
likelihood per pixel. The image is the appearance decoder's output warped by the perspective.
:func:`infer` follows the variant's :class:`~abc_tf.methods.vae.Structure`. The loss is the
negative ELBO with a KL warm-up. The comment under the imports gives the model, the loss, the
augmentation and the networks, with what is ours.

Logs: ``loss``, ``reconstruction`` (-log p(x | z), nats per image), ``kl_appearance``,
``kl_perspective`` and ``kl_weight``. :class:`VITAEMonitor` writes under ``logs/vitae`` every
``eval_every`` steps (0: every ``log_every``) and at the end. It draws reconstructions, the aligned
images x' for c_vitae, and a traversal grid of every latent dimension, appearance rows first.
"""

from __future__ import annotations

import math
import os

import keras
import numpy as np
import tensorflow as tf

import models
from abc_tf import optimizers
from abc_tf.config import ExperimentConfig
from abc_tf.methods.base import Method, MethodModel, draw_rows, to_float_images
from abc_tf.methods.distributions import gaussian_kl
from abc_tf.methods.monitor import TrainingMonitor
from abc_tf.methods.vae import PRESETS, Structure, VaeConfig, variant_smoke
from abc_tf.methods.vae import networks as vitae_networks
from models import spatial_transformer

# The warp: x^ = T_theta(dec_A(z_A)), theta = dec_P(z_P) in R^6. T_theta is the diffeomorphic
# affine map expm([[t1 t2 t3], [t4 t5 t6], [0 0 0]]) (models/spatial_transformer.py).
# Inference by variant:
# - vae, no perspective: one latent space z of d = --method.latent_dim (4 in the paper), q(z | x),
#   x^ = dec(z).
# - u_vitae, a perspective space: q_P(z_P | x) and q_A(z_A | x), both from the image, with
#   d_A = d_P = latent_dim / 2.
# - c_vitae, the appearance aligned: q_P(z_P | x), theta = dec_P(z_P), and x' = T_{-theta}(x), the
#   image with the perspective undone. The appearance is inferred from it: q_A(z_A | x').
#
# The loss, averaged over a batch of B images:
#
#   loss = -log p(x | z_A, z_P) + w (KL(q_A || N(0, I)) + KL(q_P || N(0, I)))
#
# One reparameterised sample per image, and w = min(step / (kl_warmup * steps), 1). The paper
# ramps per epoch over half the epochs; we ramp per step [ours]. With w = 1 the loss is the -ELBO
# in nats per image. Pixel probabilities are clipped to [1e-6, 1 - 1e-6] [ours]. The warp reads
# zero outside the template, and a pixel of ink there would otherwise cost an infinite
# log-likelihood.
#
# With affine_augmentation, training images are first warped by a random rotation up to 20
# degrees and a shift up to 10% of the image. That is the authors' disentagelment.py,
# RandomAffine(20, translate 0.1). We sample bilinearly [ours: theirs is nearest-pixel]. Their
# main.py had the same line until the commit "final experimentation" (2019-01-18); it is
# commented out since. Their poster (poster.pdf, same repository) describes its MNIST as randomly
# translated and rotated. The samples' and the augmentation's noise comes from (seed, step), so a
# resumed run draws what an unbroken one would.
#
# Networks (abc_tf/methods/vae/networks.py): the supplement's Table 1 MLPs. VITAE's have about half
# the units, the same for both spaces [ours]. The supplement (L49) says the appearance networks
# benefit from a little more capacity than the perspective ones, without numbers. The authors'
# released code builds both spaces from the same 512-256 MLPs with batch norm.
PROBABILITY_FLOOR = 1e-6
ROTATION_DEGREES, TRANSLATION = 20.0, 0.1  # the authors' RandomAffine
LOG_SUBDIR = "vitae"  # run_dir/logs/vitae: reconstructions and traversals
GRID_IMAGES = 8  # images in the reconstruction grid
TRAVERSAL_STEPS = 7  # values per latent dimension, from -2.5 to 2.5 prior standard deviations
TRAVERSAL_RANGE = 2.5
LOG_NAMES = ("loss", "reconstruction", "kl_appearance", "kl_perspective")


# ---------------------------------------------------------------- the ELBO terms


def bernoulli_log_likelihood(images: tf.Tensor, probabilities: tf.Tensor) -> tf.Tensor:
    """log p(x | z) [B] of images [B, H, W, C] in [0, 1] under pixel probabilities of the same
    shape.

    It sums x log p + (1 - x) log(1 - p) over pixels, with p clipped to [1e-6, 1 - 1e-6].
    """
    p = tf.clip_by_value(tf.cast(probabilities, tf.float32), PROBABILITY_FLOOR, 1.0 - PROBABILITY_FLOOR)
    x = tf.cast(images, tf.float32)
    per_pixel = x * tf.math.log(p) + (1.0 - x) * tf.math.log(1.0 - p)
    return tf.reduce_sum(tf.reshape(per_pixel, [tf.shape(x)[0], -1]), axis=1)


def gaussian_log_density(z: tf.Tensor, mean: tf.Tensor, variance: tf.Tensor) -> tf.Tensor:
    """log N(z; mean, diag variance) [B] of [B, d]."""
    return -0.5 * tf.reduce_sum(
        tf.math.log(2.0 * math.pi * variance) + tf.square(z - mean) / variance, axis=1
    )


def kl_weight(step, warmup_steps: float) -> tf.Tensor:
    """w = min(step / warmup_steps, 1), float32; 1 when warmup_steps is 0."""
    if warmup_steps <= 0:
        return tf.constant(1.0, tf.float32)
    return tf.minimum(tf.cast(step, tf.float32) / float(warmup_steps), 1.0)


# ---------------------------------------------------------------- inference and generation


def latent_dims(structure: Structure, embedding_dim: int) -> tuple[int, int]:
    """d_A and d_P. Without a perspective the one space is the "appearance" one."""
    return (embedding_dim // 2, embedding_dim // 2) if structure.perspective else (embedding_dim, 0)


def infer(
    networks: dict[str, keras.Model], structure: Structure, images: tf.Tensor, noise: dict[str, tf.Tensor]
) -> dict[str, tf.Tensor]:
    """One pass of inference and generation for float images [B, H, W, C].

    networks: "appearance_posterior" maps images to [mean, variance]; "appearance_decoder" maps
    z_A to pixel probabilities. With a perspective there are also "perspective_posterior" and
    "affine_decoder", which maps z_P to theta [B, 6].
    noise: standard normal draws {"appearance": [B, d_A], "perspective": [B, d_P]}. The
    reparameterisation is z = mean + sqrt(variance) * noise.
    Returns float32 tensors. Each space gives mean, variance and z under its prefix, e.g.
    "appearance_mean". Then "theta", "aligned" (x', the aligned appearance) and "template", which
    is dec_A(z_A). Last, "probabilities": x^, the pixel probabilities of the image.
    """
    out = {}
    appearance_input = images
    if structure.perspective:
        mean, variance = networks["perspective_posterior"](images)
        z_p = mean + tf.sqrt(variance) * noise["perspective"]
        theta = networks["affine_decoder"](z_p)
        out.update(perspective_mean=mean, perspective_variance=variance, perspective_z=z_p, theta=theta)
        if structure.aligned_appearance:
            appearance_input = spatial_transformer.warp(
                images, spatial_transformer.affine_matrices(theta, inverse=True)
            )
            out["aligned"] = appearance_input
    mean, variance = networks["appearance_posterior"](appearance_input)
    z_a = mean + tf.sqrt(variance) * noise["appearance"]
    template = networks["appearance_decoder"](z_a)
    out.update(appearance_mean=mean, appearance_variance=variance, appearance_z=z_a, template=template)
    out["probabilities"] = (
        spatial_transformer.warp(template, spatial_transformer.affine_matrices(out["theta"]))
        if structure.perspective
        else template
    )
    return out


def elbo_terms(images: tf.Tensor, inferred: dict[str, tf.Tensor]) -> dict[str, tf.Tensor]:
    """Per image [B]: "reconstruction", i.e. -log p(x | z), "kl_appearance" and "kl_perspective".

    The VAE's "kl_perspective" is 0.
    """
    terms = {
        "reconstruction": -bernoulli_log_likelihood(images, inferred["probabilities"]),
        "kl_appearance": gaussian_kl(
            inferred["appearance_mean"], tf.math.log(inferred["appearance_variance"])
        ),
    }
    if "perspective_mean" in inferred:
        terms["kl_perspective"] = gaussian_kl(
            inferred["perspective_mean"], tf.math.log(inferred["perspective_variance"])
        )
    else:
        terms["kl_perspective"] = tf.zeros_like(terms["kl_appearance"])
    return terms


def log_weights(images: tf.Tensor, inferred: dict[str, tf.Tensor]) -> tf.Tensor:
    """Importance weights log p(x, z_A, z_P) - log q(z_A, z_P | x) [B] at the sampled z.

    For c_vitae, q = q_P(z_P | x) q_A(z_A | x'), with x' made from that z_P.
    """
    total = bernoulli_log_likelihood(images, inferred["probabilities"])
    for space in ("appearance", "perspective"):
        if f"{space}_z" in inferred:
            z = inferred[f"{space}_z"]
            total += gaussian_log_density(z, tf.zeros_like(z), tf.ones_like(z))
            total -= gaussian_log_density(z, inferred[f"{space}_mean"], inferred[f"{space}_variance"])
    return total


def draw_noise(batch, dims: tuple[int, int], seed: tf.Tensor) -> dict[str, tf.Tensor]:
    """Standard normal draws [batch, d_A] and [batch, d_P] from a stateless seed [2].

    Under a distribution strategy, this replica's rows of the global batch's draws
    (``draw_rows``).
    """
    seeds = tf.random.experimental.stateless_split(seed, 2)

    def normal(dim: int, seed: tf.Tensor):
        return lambda rows: tf.random.stateless_normal(tf.stack([rows, dim]), seed=seed)

    return {
        space: draw_rows(normal(dim, seeds[index]), batch)
        for index, (space, dim) in enumerate(zip(("appearance", "perspective"), dims))
    }


def random_affine(images: tf.Tensor, seed: tf.Tensor) -> tf.Tensor:
    """images [B, H, W, C] warped by a random rotation and translation.

    The rotation is uniform in +-20 degrees about the centre. The translation is uniform in +-10%
    of the width and height; the normalised grid spans 2. Per-image draws as in
    :func:`draw_noise`.
    """
    batch = tf.shape(images)[0]
    draws = draw_rows(
        lambda rows: tf.random.stateless_uniform(tf.stack([rows, 3]), seed=seed, minval=-1.0, maxval=1.0),
        batch,
    )
    angle = draws[:, 0] * math.radians(ROTATION_DEGREES)
    shift = draws[:, 1:] * (2.0 * TRANSLATION)
    cos, sin = tf.cos(angle), tf.sin(angle)
    matrices = tf.reshape(tf.stack([cos, -sin, shift[:, 0], sin, cos, shift[:, 1]], axis=1), [-1, 2, 3])
    return spatial_transformer.warp(images, matrices)


# ---------------------------------------------------------------- the model


class VITAEModel(MethodModel):
    """The VAE or a VITAE, as ``structure`` declares, on batches {"images": [B, H, W, C]}.

    Args:
      structure: the variant's parts, its config's ``structure``.
      networks: the trained networks of :func:`infer`, built by :func:`build_networks`.
      warmup_steps: the KL weight reaches 1 at this step.
      augment: warp training images by random affine maps first.
      seed: of the samples' and the augmentation's noise; stateless with the step.
    """

    def __init__(
        self,
        structure: Structure,
        networks: dict[str, keras.Model],
        warmup_steps: float,
        augment: bool,
        seed: int = 0,
        **kwargs,
    ):
        super().__init__(seed=seed, **kwargs)
        self.structure = structure
        self.parts = dict(networks)
        self.appearance_posterior = networks["appearance_posterior"]
        self.appearance_decoder = networks["appearance_decoder"]
        dim_a = int(self.appearance_posterior.output_shape[0][-1])
        if not structure.perspective:
            self.representation = vitae_networks.mean_of(self.appearance_posterior, name="encoder")
            self.dims = (dim_a, 0)
        else:
            self.perspective_posterior = networks["perspective_posterior"]
            self.affine_decoder = networks["affine_decoder"]
            self.perspective = vitae_networks.mean_of(self.perspective_posterior, name="perspective")
            parts = (
                self.perspective_posterior,
                self.affine_decoder,
                self.appearance_posterior,
                structure.aligned_appearance,
            )
            self.appearance = vitae_networks.vitae_codes(*parts, output="appearance", name="appearance")
            self.representation = vitae_networks.vitae_codes(*parts, output="encoder", name="encoder")
            self.generator = vitae_networks.vitae_generator(self.appearance_decoder, self.affine_decoder)
            self.dims = (dim_a, int(self.perspective_posterior.output_shape[0][-1]))
        self.warmup_steps = float(warmup_steps)
        self.augment = bool(augment)
        self.track(LOG_NAMES, values_at_step=("kl_weight",))

    def networks(self) -> dict[str, keras.Model]:
        kept = {"encoder": self.representation, **self.parts}
        if self.structure.perspective:
            kept.update(appearance=self.appearance, perspective=self.perspective, decoder=self.generator)
        return kept

    def decode(self, z_appearance: tf.Tensor, z_perspective: tf.Tensor | None = None) -> tf.Tensor:
        """Pixel probabilities [B, H, W, C] of latent codes. The VAE ignores z_perspective."""
        if not self.structure.perspective:
            return self.appearance_decoder(z_appearance)
        return self.generator([z_appearance, z_perspective])

    def compute_terms(
        self, batch: dict[str, tf.Tensor], step: tf.Tensor, training: bool
    ) -> dict[str, tf.Tensor]:
        """The negative ELBO's terms, with the KL weight of ``step``. Images are warped when
        augmenting.

        No layer of the networks acts differently in training.
        """
        del training
        images = to_float_images(batch["images"])
        seed = self.step_seed(step)
        augment_seed, noise_seed = tf.unstack(tf.random.experimental.stateless_split(seed, 2))
        if self.augment:
            images = random_affine(images, augment_seed)
        inferred = infer(
            self.parts, self.structure, images, draw_noise(tf.shape(images)[0], self.dims, noise_seed)
        )
        terms = {name: tf.reduce_mean(value) for name, value in elbo_terms(images, inferred).items()}
        terms["kl_weight"] = kl_weight(step, self.warmup_steps)
        terms["loss"] = terms["reconstruction"] + terms["kl_weight"] * (
            terms["kl_appearance"] + terms["kl_perspective"]
        )
        return terms

    # ------------------------------------------------------------ figures

    def reconstruction_grid(self, images: np.ndarray) -> np.ndarray:
        """uint8 [rows H, n W, C]: rows of images, aligned x', reconstructions and templates.

        The reconstruction uses the posterior means. x' is C-VITAE's only. The template dec_A
        before the warp is VITAE's only.
        """
        x = to_float_images(tf.convert_to_tensor(images))
        zeros = {
            "appearance": tf.zeros([tf.shape(x)[0], self.dims[0]]),
            "perspective": tf.zeros([tf.shape(x)[0], self.dims[1]]),
        }
        inferred = infer(self.parts, self.structure, x, zeros)
        rows = [x] + ([inferred["aligned"]] if "aligned" in inferred else []) + [inferred["probabilities"]]
        if self.structure.perspective:
            rows.append(inferred["template"])
        return tile([np.asarray(row) for row in rows])

    def traversal_grid(self, image: np.ndarray) -> np.ndarray:
        """uint8 [(d_A + d_P) H, 7 W, C]: one row per latent dimension, appearance first.

        From one image's posterior means, each row sweeps its dimension over -2.5..2.5 and keeps
        the others.
        """
        x = to_float_images(tf.convert_to_tensor(image[None]))
        zeros = {"appearance": tf.zeros([1, self.dims[0]]), "perspective": tf.zeros([1, self.dims[1]])}
        inferred = infer(self.parts, self.structure, x, zeros)
        codes = tf.concat(
            [inferred["appearance_mean"]] + ([inferred["perspective_mean"]] if self.dims[1] else []), axis=1
        )
        values = np.linspace(-TRAVERSAL_RANGE, TRAVERSAL_RANGE, TRAVERSAL_STEPS, dtype=np.float32)
        rows = []
        for dim in range(sum(self.dims)):
            swept = np.repeat(np.asarray(codes), TRAVERSAL_STEPS, axis=0)
            swept[:, dim] = values
            rows.append(np.asarray(self.decode(swept[:, : self.dims[0]], swept[:, self.dims[0] :])))
        return tile(rows)


def tile(rows: list[np.ndarray]) -> np.ndarray:
    """Rows of images [n, H, W, C] in [0, 1] -> one uint8 image [rows H, n W, C]."""
    grid = np.concatenate([np.concatenate(list(row), axis=1) for row in rows], axis=0)
    return np.round(np.clip(grid, 0.0, 1.0) * 255.0).astype(np.uint8)


class VITAEMonitor(TrainingMonitor):
    """Writes the reconstruction and traversal grids of :class:`VITAEModel` under ``log_dir``.

    It writes every ``eval_every`` steps and at the last step; 0 means every ``log_every`` steps.
    The images are fixed ones of the family's own "images" stream.
    """

    def __init__(self, config: ExperimentConfig, log_dir: str):
        super().__init__(log_dir, config.trainer.steps)
        self.config = config

    def write(self, step: int, logs: dict) -> None:
        if not self.due(step, self.config.trainer.eval_every or self.config.trainer.log_every):
            return
        images = self.fixed_batch(self.config, "images", GRID_IMAGES)["images"]
        tf.summary.image(
            "reconstructions",
            self.model.reconstruction_grid(images)[None],
            max_outputs=1,
            description="rows: the images, (c_vitae) the aligned images x', the reconstructions "
            "from the posterior means, (VITAE) the appearance templates before the warp",
        )
        tf.summary.image(
            "traversals",
            self.model.traversal_grid(images[0])[None],
            max_outputs=1,
            description="one row per latent dimension, appearance first, then perspective, "
            f"swept over -{TRAVERSAL_RANGE}..{TRAVERSAL_RANGE}",
        )


# ---------------------------------------------------------------- the declarations


def check_config(config: ExperimentConfig) -> None:
    """The variant's settings, before any data or network. A ValueError names the flag."""
    method = config.method
    if not 0.0 <= method.kl_warmup <= 1.0:
        raise ValueError(
            f"--method.kl_warmup must lie in [0, 1], a fraction of the steps, got {method.kl_warmup}."
        )
    if method.structure.perspective and (method.latent_dim < 2 or method.latent_dim % 2):
        raise ValueError(
            f"--method.latent_dim must be even for --method={method.name} (half appearance z_A, half "
            f"perspective z_P; the paper: 4), got {method.latent_dim}."
        )


def build_networks(
    structure: Structure, embedding_dim: int, image_shape: tuple[int, int, int]
) -> dict[str, keras.Model]:
    """The networks of :func:`infer`, built in a fixed order: one seed, one set of weights."""
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
    encoder_units, decoder_units = vitae_networks.VITAE_ENCODER_UNITS, vitae_networks.VITAE_DECODER_UNITS
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


def build(config: ExperimentConfig, image_shape: tuple[int, int, int]) -> VITAEModel:
    """The networks of the config's structure and the paper's Adam, at the config's learning rate."""
    structure = config.method.structure
    model = VITAEModel(
        structure,
        build_networks(structure, config.method.latent_dim, image_shape),
        warmup_steps=config.method.kl_warmup * config.trainer.steps,
        augment=config.method.affine_augmentation,
        seed=config.trainer.seed,
    )
    model.compile_for(config.trainer, optimizers.run_adam(config.trainer))
    return model


def training_callbacks(config: ExperimentConfig, log_dir: str) -> list[keras.callbacks.Callback]:
    return [VITAEMonitor(config, os.path.join(log_dir, LOG_SUBDIR))]


def declare_variant(
    variant: str, config: type[VaeConfig], presets: dict[str, ExperimentConfig], told: str
) -> Method:
    """The declaration of ``variant``: vae, u_vitae or c_vitae.

    Each is its own package; its config declares its structure. ``told``: what it is given, in
    words.
    """
    return Method(
        name=variant,
        config=config,
        presets=presets,
        smallest_run=variant_smoke(config, variant),
        quick_run=presets[f"mnist_{variant}_quick"],
        build=build,
        check_config=check_config,
        supervision=f"none: {told}",
        training_callbacks=training_callbacks,
        measures="abc_tf.evaluation.tasks.method_measures:likelihood_measures",
        measures_need=("class_labelled_images",),
    )


METHOD = declare_variant(
    "vae", VaeConfig, PRESETS, "single unlabelled images (a VAE with a Bernoulli likelihood)"
)
