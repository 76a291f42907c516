"""Product-manifold projection (``--method=pmp``; Fumero et al., ICML 2021; docs/PAPERS.md section P1).

An autoencoder whose latent code is a sum of k subspace codes (``models/pmp_networks.py``).
A Siamese encoder f feeds k projectors P_i: s_i = P_i(f(x)), z = sum_i s_i, and a decoder g reads z.
It trains on "pairs" batches (x1, x2) that differ in one unknown factor, with

  L = L_rec + b1(t) (w_dis L_dis + w_spar L_spar) + b2(t) w_cons L_cons + b3(t) w_reg L_reg

The maximum weights w are 0.1, 0.1, 100 and 1e-4 (the supplement's Table 4). The comment in
``losses.py`` defines each term and the schedule, the comment under the imports the optimizer; both
mark what is [code] and [ours].
Logs: every loss term (``rec_loss``, ``spar_loss``, ``dis_loss``, ``cons_loss``, ``reg_loss``),
the schedule (``beta1..3``) and ``loss``. :class:`PMPMonitor` (``monitor.py``) adds, under ``logs/pmp``, the
subspace-usage histogram every ``log_every`` steps. It also draws a reconstruction and
subspace-swap grid every ``eval_every`` steps and at the end.
"""

from __future__ import annotations

import os

import keras
import numpy as np
import tensorflow as tf

import models
from abc_tf import optimizers
from abc_tf.config import ExperimentConfig
from abc_tf.methods.base import Method, MethodModel, Update, build_encoder, to_float_images
from abc_tf.methods.pmp import PRESETS, PmpConfig
from abc_tf.methods.pmp.losses import (
    CONSISTENCY_FROM,
    consistency_loss,
    distance_loss,
    draw_mixes,
    loss_weights,
    mix_codes,
    pair_distances,
    reconstruction_loss,
    sparsity_loss,
    usage_loss,
)
from abc_tf.methods.pmp.monitor import PMPMonitor, SubspaceUsage
from models import pmp_networks

# Optimizer: Adam with betas (0.9, 0.99) and epsilon 1e-8 (the supplement's Table 4). The authors'
# code keeps PyTorch's default betas (0.9, 0.999). The learning rate is the config's, 5e-4 in the
# presets. Weight decay 1e-6 is applied as the authors' PyTorch Adam does [code]: 1e-6 * w is added
# to every gradient, i.e. 0.5e-6 * ||w||^2 to the loss. Under mixed precision the loss terms are
# computed in float32, since the networks' outputs are float32.
ADAM_BETAS, ADAM_EPSILON, WEIGHT_DECAY = (0.9, 0.99), 1e-8, 1e-6
LOG_SUBDIR = "pmp"  # run_dir/logs/pmp: usage histograms and image grids

LOSS_NAMES = ("rec_loss", "spar_loss", "dis_loss", "cons_loss", "reg_loss")


# ---------------------------------------------------------------- the model


class PMPModel(MethodModel):
    """Encoder f, k projectors, decoder g, trained on pair batches {"x1", "x2"} [B, H, W, C].

    Args:
      features: f, images [B, H, W, C] in [0, 1] -> [B, d].
      projectors: [B, d] -> subspace codes [B, k, d].
      decoder: g, z [B, d] -> images [B, H, W, C].
      total_steps: T of the schedule, the run's ``steps``.
      warmup: the schedule's reconstruction-only fraction.
      weights: maximum weights {"dis", "spar", "cons", "reg"}.
      seed: of the consistency loss's mixes. Stateless with the step, so a resume draws the same.
    """

    def __init__(
        self,
        features: keras.Model,
        projectors: keras.Model,
        decoder: keras.Model,
        total_steps: int,
        warmup: float,
        weights: dict[str, float],
        seed: int = 0,
        **kwargs,
    ):
        super().__init__(seed=seed, **kwargs)
        self.features, self.projectors, self.decoder = features, projectors, decoder
        self.representation = pmp_networks.representation(features, projectors, name="encoder")
        self.num_subspaces = int(projectors.output_shape[1])
        self.total_steps, self.warmup = int(total_steps), float(warmup)
        self.loss_weights = {name: float(weights[name]) for name in ("dis", "spar", "cons", "reg")}
        self.track(("loss", *LOSS_NAMES), values_at_step=("beta1", "beta2", "beta3"))
        self.usage = SubspaceUsage(self.num_subspaces)

    def networks(self) -> dict[str, keras.Model]:
        return {
            "encoder": self.representation,
            "features": self.features,
            "projectors": self.projectors,
            "decoder": self.decoder,
        }

    def codes(self, images: tf.Tensor, training: bool = False) -> tf.Tensor:
        """Subspace codes [B, k, d], float32, of float images."""
        return tf.cast(
            self.projectors(self.features(images, training=training), training=training), tf.float32
        )

    def decode(self, z: tf.Tensor, training: bool = False) -> tf.Tensor:
        return tf.cast(self.decoder(z, training=training), tf.float32)

    def compute_terms(
        self, batch: dict[str, tf.Tensor], step: tf.Tensor, training: bool
    ) -> dict[str, tf.Tensor]:
        """The terms of the module docstring; "objective" adds the weight decay to "loss"."""
        x1, x2 = to_float_images(batch["x1"]), to_float_images(batch["x2"])
        images = tf.concat([x1, x2], axis=0)
        pairs = tf.shape(x1)[0]
        codes = self.codes(images, training=training)
        rec = reconstruction_loss(self.decode(tf.reduce_sum(codes, axis=1), training=training), images)
        codes1, codes2 = codes[:pairs], codes[pairs:]
        squared, changed = pair_distances(codes1, codes2)
        b1, b2, b3 = loss_weights(step, self.total_steps, self.warmup)
        terms = {
            "rec_loss": rec,
            "spar_loss": sparsity_loss(codes),
            "dis_loss": distance_loss(squared, changed),
            "reg_loss": usage_loss(squared),
            "changed": changed,
            "beta1": b1,
            "beta2": b2,
            "beta3": b3,
        }
        if self.loss_weights["cons"] > 0:
            seed = self.step_seed(step)
            mixes = draw_mixes(pairs, self.num_subspaces, seed)
            recode = lambda z: self.codes(self.decode(z, training=training), training=training)  # noqa: E731
            consistency = lambda: consistency_loss(mix_codes(codes1, codes2, mixes), recode)  # noqa: E731
            if self.jit_compile:
                # Under XLA a tf.cond on this step-dependent predicate recompiled the whole step
                # at every step (XLA's compile log: one compilation per step, 15-30 s each on 2
                # CPU cores). Computed at every step instead, and zeroed while b2 <= 0.01.
                terms["cons_loss"] = tf.cast(b2 > CONSISTENCY_FROM, tf.float32) * consistency()
            else:
                terms["cons_loss"] = tf.cond(
                    b2 > CONSISTENCY_FROM, consistency, lambda: tf.constant(0.0, tf.float32)
                )
        else:
            terms["cons_loss"] = tf.constant(0.0, tf.float32)
        w = self.loss_weights
        terms["loss"] = (
            rec
            + b1 * (w["dis"] * terms["dis_loss"] + w["spar"] * terms["spar_loss"])
            + b2 * w["cons"] * terms["cons_loss"]
            + b3 * w["reg"] * terms["reg_loss"]
        )
        terms["objective"] = terms["loss"] + self.weight_decay_term()
        if training:
            self.usage.update_state(changed)  # read and reset by PMPMonitor at each log step
        return terms

    def weight_decay_term(self) -> tf.Tensor:
        """0.5 * 1e-6 * ||w||^2 over every trainable variable: PyTorch Adam's weight_decay."""
        return (
            0.5
            * WEIGHT_DECAY
            * tf.add_n([tf.reduce_sum(tf.square(tf.cast(v, tf.float32))) for v in self.trainable_variables])
        )

    def updates(self) -> list[Update]:
        # The weight decay is minimised with the loss but not logged (PyTorch's Adam weight_decay).
        return [
            Update(
                lambda batch, step, training, earlier: self.compute_terms(batch, step, training),
                self.optimizer,
                lambda: self.trainable_variables,
                loss="objective",
            )
        ]

    def swap_grid(self, x1: np.ndarray, x2: np.ndarray) -> np.ndarray:
        """uint8 image [n H, (k + 4) W, C]: per pair a row x1 | g(z1) | k swaps | g(z2) | x2.

        Swap i decodes x1's code with subspace i taken from x2.
        """
        x1, x2 = to_float_images(tf.convert_to_tensor(x1)), to_float_images(tf.convert_to_tensor(x2))
        codes1, codes2 = self.codes(x1), self.codes(x2)
        k = self.num_subspaces
        n = tf.shape(x1)[0]
        rec1 = self.decode(tf.reduce_sum(codes1, axis=1))
        rec2 = self.decode(tf.reduce_sum(codes2, axis=1))
        # Mix m = i * n + b takes subspace i from x2_b and the others from x1_b.
        swapped = self.decode(tf.reduce_sum(mix_codes(codes2, codes1, tf.range(k * n)), axis=1))
        swapped = tf.transpose(tf.reshape(swapped, tf.concat([[k, n], tf.shape(x1)[1:]], 0)), [1, 0, 2, 3, 4])
        row = tf.concat(
            [x1[:, None], rec1[:, None], swapped, rec2[:, None], x2[:, None]], axis=1
        )  # [n, k+4, H, W, C]
        shape = tf.shape(row)
        grid = tf.reshape(
            tf.transpose(row, [0, 2, 1, 3, 4]), [shape[0] * shape[2], shape[1] * shape[3], shape[4]]
        )
        return np.asarray(tf.cast(tf.round(tf.clip_by_value(grid, 0.0, 1.0) * 255.0), tf.uint8))


# ---------------------------------------------------------------- the declaration

WEIGHT_FIELDS = {
    "dis": "distance_weight",
    "spar": "sparsity_weight",
    "cons": "consistency_weight",
    "reg": "usage_weight",
}


def check_config(config: ExperimentConfig) -> None:
    """PMP's settings, before any data or network. A ValueError names the flag."""
    if config.method.num_subspaces < 2:
        raise ValueError(
            "--method.num_subspaces must be at least 2 (L_dis compares the changed subspace with the "
            f"others), got {config.method.num_subspaces}."
        )
    if not 0.0 <= config.method.warmup < 1.0:
        raise ValueError(
            f"--method.warmup must lie in [0, 1), a fraction of the steps, got {config.method.warmup}."
        )
    for field in WEIGHT_FIELDS.values():
        value = getattr(config.method, field)
        if not (np.isfinite(value) and value >= 0):
            raise ValueError(f"--method.{field} must be a finite number >= 0, got {value}.")


def build(config: ExperimentConfig, image_shape: tuple[int, int, int]) -> PMPModel:
    """f (``config.encoder.architecture``), the projectors and g, compiled with the authors' Adam.

    They are built in that order, so one seed gives one set of initial weights.
    """
    features = build_encoder(config, image_shape)
    projectors = models.build(
        "pmp_projectors",
        embedding_dim=config.encoder.embedding_dim,
        num_subspaces=config.method.num_subspaces,
    )
    decoder = models.build(
        "pmp_decoder", embedding_dim=config.encoder.embedding_dim, output_shape=tuple(image_shape)
    )
    model = PMPModel(
        features,
        projectors,
        decoder,
        total_steps=config.trainer.steps,
        warmup=config.method.warmup,
        weights={name: getattr(config.method, field) for name, field in WEIGHT_FIELDS.items()},
        seed=config.trainer.seed,
    )
    optimizer = optimizers.run_adam(config.trainer, betas=ADAM_BETAS, epsilon=ADAM_EPSILON)
    model.compile_for(config.trainer, optimizer)
    return model


def training_callbacks(config: ExperimentConfig, log_dir: str) -> list[keras.callbacks.Callback]:
    return [PMPMonitor(config, os.path.join(log_dir, LOG_SUBDIR))]


METHOD = Method(
    name="pmp",
    config=PmpConfig,
    presets=PRESETS,
    smallest_run=PRESETS["shapes3d_pmp_quick"].replace(
        name="pmp_smoke", pairs_per_step=2, mixed_precision=False, eval_every=0, steps=4, log_every=2
    ),
    quick_run=PRESETS["shapes3d_pmp_quick"],
    build=build,
    check_config=check_config,
    supervision=(
        "pairs that differ in exactly one factor, which one unknown (Locatello et al. 2020 weak supervision)"
    ),
    training_callbacks=training_callbacks,
)
