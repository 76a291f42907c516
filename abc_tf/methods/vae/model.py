"""The VAE and VITAE peers (``--method=vae``, ``u_vitae``, ``c_vitae``), trained on "images" batches.

VITAE is Detlefsen and Hauberg, NeurIPS 2019 (docs/PAPERS.md section P2). The generative model
is p(x) = integral p(x | z_A, z_P) p(z_A) p(z_P), with standard normal priors and a Bernoulli
likelihood per pixel. The image is the appearance decoder's output warped by the perspective.
:func:`infer` (``losses.py``) follows the variant's :class:`~abc_tf.methods.vae.Structure`. The
loss is the negative ELBO with a KL warm-up. The comment in ``losses.py`` gives the model, the loss
and the augmentation, and ``networks.py`` the networks, with what is ours.

Logs: ``loss``, ``reconstruction`` (-log p(x | z), nats per image), ``kl_appearance``,
``kl_perspective`` and ``kl_weight``. :class:`VITAEMonitor` (``monitor.py``) writes under ``logs/vitae`` every
``eval_every`` steps (0: every ``log_every``) and at the end. It draws reconstructions, the aligned
images x' for c_vitae, and a traversal grid of every latent dimension, appearance rows first.
"""

from __future__ import annotations

import os

import keras
import numpy as np
import tensorflow as tf

from abc_tf import optimizers
from abc_tf.config import ExperimentConfig
from abc_tf.methods.base import Method, MethodModel, to_float_images
from abc_tf.methods.vae import PRESETS, Structure, VaeConfig, variant_smoke
from abc_tf.methods.vae import networks as vitae_networks
from abc_tf.methods.vae.losses import draw_noise, elbo_terms, infer, kl_weight, random_affine
from abc_tf.methods.vae.monitor import TRAVERSAL_RANGE, TRAVERSAL_STEPS, VITAEMonitor, tile

LOG_SUBDIR = "vitae"  # run_dir/logs/vitae: reconstructions and traversals
LOG_NAMES = ("loss", "reconstruction", "kl_appearance", "kl_perspective")


# ---------------------------------------------------------------- the model


class VITAEModel(MethodModel):
    """The VAE or a VITAE, as ``structure`` declares, on batches {"images": [B, H, W, C]}.

    Args:
      structure: the variant's parts, its config's ``structure``.
      networks: the trained networks of :func:`infer`, built by ``networks.build_networks``.
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


def build(config: ExperimentConfig, image_shape: tuple[int, int, int]) -> VITAEModel:
    """The networks of the config's structure and the paper's Adam, at the config's learning rate."""
    structure = config.method.structure
    model = VITAEModel(
        structure,
        vitae_networks.build_networks(structure, config.method.latent_dim, image_shape),
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
