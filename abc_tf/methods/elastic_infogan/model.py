"""Elastic-InfoGAN (``--method=elastic_infogan``; Ojha et al., NeurIPS 2020; docs/PAPERS.md section P3).

An InfoGAN on single unlabelled images ("images" batches). Its 10-way categorical code c follows a *learned*
class prior p = softmax(pi), so the code can find the digits of class-imbalanced data. ``networks.py`` beside
this file holds the generator G, the trunk of discriminator D and code predictor Q, D's real/fake head and Q's
head (FC 128 penultimate layer, FC 10). The comment under the imports gives a training step.
``method.prior=uniform`` fixes p at 1/10, and ``method.contrastive_weight=0`` drops NT-Xent. Both together are
InfoGAN; the learned prior alone is the paper's Gumbel-softmax baseline.

``networks()``: "encoder" (images -> Q's 128-d penultimate features, which every evaluator embeds),
"generator" ([z, c] -> images in [0, 1]), "discriminator" (images -> logit) and "q" (images -> code
logits). The prior logits pi are a weight of the model, so checkpoints hold them. Logs: ``d_loss``,
``g_loss``, ``info_loss``, ``ntxent_loss``, and ``loss`` = d_loss + g_loss; a NaN stops the run.
:class:`InfoGANMonitor` adds the prior's logs and files.
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
from abc_tf.data.mnist import digit_augment
from abc_tf.data.mnist.digit_augment import augment  # T, the identity-preserving augmentation
from abc_tf.methods.base import (
    ImageNeed,
    Method,
    MethodModel,
    Update,
    draw_rows,
    gather_replicas,
    loss_scaled,
    replica_rows,
    to_float_images,
)
from abc_tf.methods.elastic_infogan.monitor import InfoGANMonitor
from abc_tf.methods.elastic_infogan import ElasticInfoGanConfig, PRESETS, networks as infogan_networks

# A step: c = softmax((log p + g) / 0.1), a Gumbel-softmax sample through which the generator's
# losses reach pi. The D step (Adam 2e-4, betas 0.5/0.999; the trunk and D's head) minimises
# BCE(D(x), 1) + BCE(D(G(z, c)), 0); the G step (G, Q's head and pi) minimises BCE(D(G(z, c)), 1)
# + CE(Q(G(z, c)), argmax c) + w NT-Xent of Q's head on trunk(x) and trunk(T(x)), the D step's
# features, so NT-Xent trains Q's head alone, as the authors' optimisers split (infoGAN.py).
# T is their Augmentor pipeline (digit_augment.augment); method.elastic_field adds ours.
# Unlike the authors, who reuse the D step's G(z, c), the G step runs G again: it sees the updated
# D, and G's batch normalisation updates its statistics twice a step. Distributed, the replicas
# split batch_size and draw their rows of the global batch's noise; batch normalisation and
# NT-Xent's negatives span the global batch.


NUM_CATEGORIES = infogan_networks.NUM_CATEGORIES
GUMBEL_TEMPERATURE = 0.1  # supplement 4.4: samples very close to one-hot
NTXENT_TEMPERATURE = 1.0  # [code]: the authors' run.sh passes --mytemp 1 (their main.py's default is 0.5)
ADAM_BETAS = (
    0.5,
    0.999,
)  # [code]; the learning rate is --trainer.learning_rate (2e-4 in the presets, supplement 4.4)
PRIORS = ("learned", "uniform")
LOG_SUBDIR = "elastic_infogan"
LOSS_NAMES = ("d_loss", "g_loss", "info_loss", "ntxent_loss")


# ---------------------------------------------------------------- the losses and the sampling


def sample_gumbel(shape, seed: tf.Tensor) -> tf.Tensor:
    """Standard Gumbel noise -log(-log U), U uniform in (0, 1), from a stateless seed."""
    uniform = tf.random.stateless_uniform(shape, seed=seed, minval=1e-20, maxval=1.0)
    return -tf.math.log(-tf.math.log(uniform))


def gumbel_softmax(
    prior_logits: tf.Tensor, gumbel: tf.Tensor, temperature: float = GUMBEL_TEMPERATURE
) -> tf.Tensor:
    """The code c [B, K] = softmax((log p + g) / temperature), where p = softmax(prior_logits [K])."""
    log_prior = tf.nn.log_softmax(tf.cast(prior_logits, tf.float32))
    return tf.nn.softmax((log_prior[None, :] + gumbel) / temperature, axis=-1)


def nt_xent(features: tf.Tensor, augmented: tf.Tensor, temperature: float = NTXENT_TEMPERATURE) -> tf.Tensor:
    """NT-Xent of B positive pairs: ``features`` [B, D] and ``augmented`` [B, D].

    The mean over the 2B views of -log(exp(s_ii' / t) / sum_{k != i} exp(s_ik / t)). s is the
    cosine similarity; k runs over the other 2B - 1 views.
    """
    views = tf.math.l2_normalize(tf.concat([features, augmented], axis=0), axis=1)
    n = tf.shape(views)[0]
    batch = n // 2
    logits = tf.matmul(views, views, transpose_b=True) / temperature
    logits = logits - 1e9 * tf.eye(n)  # a view is not its own negative
    partners = tf.concat([tf.range(batch, n), tf.range(0, batch)], axis=0)
    return tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=partners, logits=logits))


def bce(logits: tf.Tensor, target: float) -> tf.Tensor:
    """Mean binary cross-entropy of real/fake logits against ``target``: 1 real, 0 fake."""
    logits = tf.cast(logits, tf.float32)
    return tf.reduce_mean(
        tf.nn.sigmoid_cross_entropy_with_logits(labels=tf.fill(tf.shape(logits), target), logits=logits)
    )


def info_loss(code_logits: tf.Tensor, code: tf.Tensor) -> tf.Tensor:
    """Cross-entropy of Q's code logits [B, K] against the drawn code's argmax."""
    labels = tf.stop_gradient(tf.argmax(code, axis=-1))
    return tf.reduce_mean(
        tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=tf.cast(code_logits, tf.float32))
    )


# ---------------------------------------------------------------- the model


class ElasticInfoGANModel(MethodModel):
    """G, the D/Q trunk, D's head, Q's head and the prior logits pi; two Adam optimizers."""

    def __init__(
        self,
        generator: keras.Model,
        trunk: keras.Model,
        d_head: keras.Model,
        q_features: keras.Model,
        q_logits: keras.Model,
        learned_prior: bool,
        contrastive_weight: float,
        noise_dim: int,
        learning_rate: float | keras.optimizers.schedules.LearningRateSchedule = 2e-4,
        seed: int = 0,
        ntxent_temperature: float = NTXENT_TEMPERATURE,
        elastic_pixels: float = 0.0,
        **kwargs,
    ):
        super().__init__(seed=seed, **kwargs)
        self.generator, self.trunk, self.d_head = generator, trunk, d_head
        self.q_features, self.q_logits = q_features, q_logits
        self.encoder = infogan_networks.chain(trunk, q_features, name="encoder")
        self.discriminator = infogan_networks.chain(trunk, d_head, name="discriminator")
        self.q = infogan_networks.chain(self.encoder, q_logits, name="q")
        self.learned_prior, self.contrastive_weight = bool(learned_prior), float(contrastive_weight)
        self.noise_dim = int(noise_dim)
        self.ntxent_temperature = float(ntxent_temperature)
        self.elastic_pixels = float(elastic_pixels)  # T's elastic displacement (0: the authors' T)
        # pi: zeros are the uniform prior the paper starts from; fixed for InfoGAN.
        self.prior_logits = self.add_weight(
            shape=(NUM_CATEGORIES,),
            initializer="zeros",
            name="prior_logits",
            trainable=self.learned_prior,
            dtype="float32",
        )
        # Loss-scaled under mixed_float16 (compile wraps only its own optimizer).
        self.d_optimizer = loss_scaled(optimizers.adam(learning_rate, betas=ADAM_BETAS))
        self.track(("loss", *LOSS_NAMES))

    def networks(self) -> dict[str, keras.Model]:
        return {
            "encoder": self.encoder,
            "generator": self.generator,
            "discriminator": self.discriminator,
            "q": self.q,
        }

    def prior(self) -> np.ndarray:
        """The class prior p = softmax(pi) [K] as NumPy."""
        return tf.nn.softmax(self.prior_logits).numpy()

    def _d_variables(self) -> list:
        return self.trunk.trainable_variables + self.d_head.trainable_variables

    def _g_variables(self) -> list:
        prior = [self.prior_logits] if self.learned_prior else []
        return (
            self.generator.trainable_variables
            + self.q_features.trainable_variables
            + self.q_logits.trainable_variables
            + prior
        )

    def generate(self, z: tf.Tensor, code: tf.Tensor, training: bool = False) -> tf.Tensor:
        """Images [B, 28, 28, 1] in [0, 1] of noise z [B, noise_dim] and codes [B, K]."""
        return tf.cast(
            self.generator(tf.concat([z, tf.cast(code, z.dtype)], axis=1), training=training), tf.float32
        )

    def updates(self) -> list[Update]:
        # The D step, then the G step against the updated D.
        return [
            Update(self._discriminator_terms, self.d_optimizer, self._d_variables, loss="d_loss"),
            Update(self._generator_terms, self.optimizer, self._g_variables, loss="g_loss"),
        ]

    def _discriminator_terms(self, batch, step, training, earlier) -> dict[str, tf.Tensor]:
        """Real images against G's, on the trunk and D's head.

        Returns the step's draws and the trunk's features of x and T(x) for NT-Xent. T(x) gets a
        pass of its own, before the update; see the module docstring.
        """
        del earlier
        real = to_float_images(batch["images"])
        size = tf.shape(real)[0]
        seeds = tf.random.experimental.stateless_split(self.step_seed(step), 3)
        # Under a distribution strategy each replica takes its rows of the global batch's draws.
        drawn = {
            "z": draw_rows(
                lambda rows: tf.random.stateless_normal(tf.stack([rows, self.noise_dim]), seeds[0]), size
            ),
            "gumbel": draw_rows(lambda rows: sample_gumbel(tf.stack([rows, NUM_CATEGORIES]), seeds[1]), size),
        }
        fake = self.generate(
            drawn["z"], gumbel_softmax(self.prior_logits, drawn["gumbel"]), training=training
        )
        drawn["real_features"] = self.trunk(real, training=training)
        if self.contrastive_weight > 0:
            augmented = augment(real, seeds[2], elastic_pixels=self.elastic_pixels, rows=replica_rows(size))
            drawn["augmented_features"] = tf.stop_gradient(self.trunk(augmented, training=training))
        d_loss = bce(self.d_head(drawn["real_features"], training=training), 1.0) + bce(
            self.d_head(self.trunk(fake, training=training), training=training), 0.0
        )
        return {"d_loss": d_loss, **drawn}

    def _generator_terms(self, batch, step, training, earlier) -> dict[str, tf.Tensor]:
        """G, Q's head and pi: fool D and make the code recoverable.

        With NT-Xent, also match Q's features of x and T(x).
        """
        del batch, step
        code = gumbel_softmax(self.prior_logits, earlier["gumbel"])
        features = self.trunk(self.generate(earlier["z"], code, training=training), training=training)
        adversarial = bce(self.d_head(features, training=training), 1.0)
        info = info_loss(self.q_logits(self.q_features(features, training=training), training=training), code)
        g_loss = adversarial + info
        if self.contrastive_weight > 0:
            # Q's head on the D step's trunk features of x and of T(x), one pass each.
            pen = tf.cast(
                self.q_features(tf.stop_gradient(earlier["real_features"]), training=training), tf.float32
            )
            pen_augmented = tf.cast(
                self.q_features(earlier["augmented_features"], training=training), tf.float32
            )
            # The negatives are the whole global batch's, as on one device.
            contrastive = nt_xent(
                gather_replicas(pen), gather_replicas(pen_augmented), self.ntxent_temperature
            )
            g_loss += self.contrastive_weight * contrastive
        else:
            contrastive = tf.constant(0.0)
        return {
            "loss": earlier["d_loss"] + g_loss,
            "g_loss": g_loss,
            "info_loss": info,
            "ntxent_loss": contrastive,
        }

    def code_grid(self, z: np.ndarray) -> np.ndarray:
        """uint8 [K H, n W, 1]: row k shows the one-hot code k with each of the n noise vectors.

        The noise is z [n, noise_dim].
        """
        z = tf.convert_to_tensor(z, tf.float32)
        n = tf.shape(z)[0]
        codes = tf.repeat(tf.eye(NUM_CATEGORIES), n, axis=0)  # row-major: code k, then noise j
        images = self.generate(tf.tile(z, [NUM_CATEGORIES, 1]), codes)
        rows = tf.reshape(images, [NUM_CATEGORIES, n, 28, 28, 1])
        grid = tf.reshape(tf.transpose(rows, [0, 2, 1, 3, 4]), [NUM_CATEGORIES * 28, n * 28, 1])
        return np.asarray(tf.cast(tf.round(tf.clip_by_value(grid, 0.0, 1.0) * 255.0), tf.uint8))


# ---------------------------------------------------------------- the declaration


def check_config(config: ExperimentConfig) -> None:
    """Elastic-InfoGAN's settings, before any data or network. A ValueError names the flag."""
    if config.method.prior not in PRIORS:
        raise ValueError(f"--method.prior must be one of {', '.join(PRIORS)}, got {config.method.prior!r}.")
    weight = config.method.contrastive_weight
    if not (math.isfinite(weight) and weight >= 0):
        raise ValueError(f"--method.contrastive_weight must be a finite number >= 0, got {weight}.")
    temperature = config.method.ntxent_temperature
    if not (math.isfinite(temperature) and temperature > 0):
        raise ValueError(f"--method.ntxent_temperature must be a finite number > 0, got {temperature}.")
    if config.method.noise_dim <= 0:
        raise ValueError(f"--method.noise_dim must be positive, got {config.method.noise_dim}.")


def build(config: ExperimentConfig, image_shape: tuple[int, int, int]) -> ElasticInfoGANModel:
    """G, the trunk, D's head and Q's two layers, compiled with the G step's Adam.

    They are built in that order, so one seed gives one set of initial weights.
    """
    generator = models.build("infogan_generator", noise_dim=config.method.noise_dim)
    trunk = models.build("infogan_trunk")
    d_head = models.build("infogan_d_head")
    q_features = models.build("infogan_q_features")
    q_logits = models.build("infogan_q_logits")
    model = ElasticInfoGANModel(
        generator,
        trunk,
        d_head,
        q_features,
        q_logits,
        learned_prior=config.method.prior == "learned",
        contrastive_weight=config.method.contrastive_weight,
        noise_dim=config.method.noise_dim,
        ntxent_temperature=config.method.ntxent_temperature,
        elastic_pixels=digit_augment.ELASTIC_PIXELS if config.method.elastic_field else 0.0,
        learning_rate=optimizers.run_learning_rate(config.trainer),
        seed=config.trainer.seed,
    )
    optimizer = optimizers.run_adam(config.trainer, betas=ADAM_BETAS)
    model.compile_for(config.trainer, optimizer)
    return model


def training_callbacks(config: ExperimentConfig, log_dir: str) -> list[keras.callbacks.Callback]:
    return [InfoGANMonitor(config, os.path.join(log_dir, LOG_SUBDIR))]


def supervision(config: ExperimentConfig) -> str:
    """What the GAN is told: with NT-Xent, which augmented images are one image; nothing else."""
    told = (
        "identity-preserving augmentations of real images"
        if config.method.contrastive_weight > 0
        else "unlabelled images"
    )
    return f"none: {told}; class imbalance unknown"


def variant(config: ExperimentConfig) -> str:
    """The paper's baselines by name, as in the module docstring; "" for Elastic-InfoGAN itself."""
    learned, contrastive = config.method.prior == "learned", config.method.contrastive_weight > 0
    if learned and contrastive:
        return ""
    if learned:
        return "Gumbel-softmax: learned prior, no NT-Xent"
    return "uniform prior with NT-Xent" if contrastive else "InfoGAN: uniform prior, no NT-Xent"


METHOD = Method(
    name="elastic_infogan",
    config=ElasticInfoGanConfig,
    presets=PRESETS,
    smallest_run=PRESETS["mnist_elastic_infogan_quick"].replace(
        name="elastic_infogan_smoke",
        source="procedural",
        jit_compile=False,
        class_split=3,
        ntxent_temperature=1.0,
        batch_size=8,
        steps=4,
        log_every=2,
    ),
    quick_run=PRESETS["mnist_elastic_infogan_quick"],
    build=build,
    check_config=check_config,
    supervision=supervision,
    training_callbacks=training_callbacks,
    variant=variant,
    images=lambda config: ImageNeed(
        infogan_networks.IMAGE_SHAPE, "--method=elastic_infogan (InfoGAN's MNIST networks)"
    ),
    measures="abc_tf.evaluation.tasks.method_measures:digit_cluster_measures",
    measures_need=("class_labelled_images",),
)
