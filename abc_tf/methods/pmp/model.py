"""Product-manifold projection (``--method=pmp``; Fumero et al., ICML 2021; docs/PAPERS.md section P1).

An autoencoder whose latent code is a sum of k subspace codes (``models/pmp_networks.py``).
A Siamese encoder f feeds k projectors P_i: s_i = P_i(f(x)), z = sum_i s_i, and a decoder g reads z.
It trains on "pairs" batches (x1, x2) that differ in one unknown factor, with

  L = L_rec + b1(t) (w_dis L_dis + w_spar L_spar) + b2(t) w_cons L_cons + b3(t) w_reg L_reg

The maximum weights w are 0.1, 0.1, 100 and 1e-4 (the supplement's Table 4). The comment under
the imports defines each term, the schedule and the optimizer, and marks what is [code] and [ours].
Logs: every loss term (``rec_loss``, ``spar_loss``, ``dis_loss``, ``cons_loss``, ``reg_loss``),
the schedule (``beta1..3``) and ``loss``. :class:`PMPMonitor` adds, under ``logs/pmp``, the
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
from abc_tf.methods.monitor import TrainingMonitor
from abc_tf.methods.pmp import PRESETS, PmpConfig
from models import pmp_networks

# Pairs: the "pairs" format changes exactly one factor, always to another value [ours]. The
# authors' dataset.py with their notebook's k = -1 changes one factor in about half the pairs.
# The others change 1 to (factors - 1), 1 to 5 on Shapes3D. Each is redrawn uniformly, so it may
# keep its old value.
#
# The terms, for B pairs with codes s [2B, k, d] of the 2B images, and
# D[b, i] = ||s_i(x1_b) - s_i(x2_b)||^2:
# - L_rec: mean squared error between g(z) and the images in [0, 1], over both images of every
#   pair. Shapes3D is decoded linearly, with no sigmoid [code].
# - L_spar (eq. 1): sum_i |s_i * sum_{j != i} s_j|, summed over the subspaces and averaged over the
#   images and the d coordinates [code]. That is eq. 1's L1 norm divided by d.
# - L_dis: i*_b, the subspace the pair changes most, is the argmax over i of D[b, i] divided by
#   subspace i's mean Euclidean distance between the batch's 2B codes. Every ordered pair counts,
#   self pairs included [code]. M is its one-hot, without gradient. L_dis is the mean over the
#   B x k entries of (1 - M) D + 10 M relu(0.05 - D). The other subspaces are pulled together,
#   the changed one is kept at least 0.05 apart [code]. The raw D enters the loss; the normalised
#   one only picks i* [code]. The authors' expression, mean 10 relu(0.05 - M D), also counts
#   10 x 0.05 for each other entry. That is a constant 0.45 at k = 10, without gradient, left out
#   of dis_loss here.
# - L_cons: 2B of the k x B mixes, drawn anew each step without replacement [code]. A mix takes
#   subspace i from x1_b and the others from x2_b: z_mix = s_i(x1_b) + sum_{j != i} s_j(x2_b).
#   It is decoded and re-encoded, and its k codes must equal the mixed ones. The loss is the mean
#   squared error over all codes, with gradients through both sides [code].
# - L_reg: 100 * mean_i (1/k - mean_b softmax_i(1000 D[b, :]))^2. Every subspace should be the one
#   that changes for about 1/k of the pairs [code].
#
# Schedule over the run's T steps: t = step / T, read from the optimizer's step inside the compiled
# train_step. Reconstruction alone while t <= method.warmup: 0.25 [code], 20% in the supplement.
# Then b1 = min(exp(25 (t - 0.4)), 1), b2 = min(exp(25 (t - 0.5)), 1) and b3 = 1 - b1 [code]. The
# supplement says b3 = 1 - b2. L_cons costs a decoder and an encoder pass, so it is computed only
# once b2 > 0.01, as in the authors' code. t moves every step [ours]. The authors' code evaluates
# the same functions at t = epoch / epochs, so its weights rise in stairs, 30 in their notebook.
# Its warm-up lasts until the first epoch above 0.25 x the epochs: epochs 0-7 of 30, 27% of the run.
#
# Optimizer: Adam with betas (0.9, 0.99) and epsilon 1e-8 (the supplement's Table 4). The authors'
# code keeps PyTorch's default betas (0.9, 0.999). The learning rate is the config's, 5e-4 in the
# presets. Weight decay 1e-6 is applied as the authors' PyTorch Adam does [code]: 1e-6 * w is added
# to every gradient, i.e. 0.5e-6 * ||w||^2 to the loss. Under mixed precision the loss terms are
# computed in float32, since the networks' outputs are float32.

# The authors' constants [code].
MARGIN, MARGIN_WEIGHT = 0.05, 10.0  # L_dis: the changed subspace keeps D >= 0.05
USAGE_SHARPNESS, USAGE_SCALE = 1000.0, 100.0  # L_reg: softmax(1000 D), times 100
RAMP_RATE, DISTANCE_CENTRE, CONSISTENCY_CENTRE = 25.0, 0.4, 0.5
CONSISTENCY_FROM = 1e-2  # L_cons is computed once b2 exceeds this
ADAM_BETAS, ADAM_EPSILON, WEIGHT_DECAY = (0.9, 0.99), 1e-8, 1e-6
LOG_SUBDIR = "pmp"  # run_dir/logs/pmp: usage histograms and image grids
GRID_PAIRS = 4  # pairs shown in the image grid

LOSS_NAMES = ("rec_loss", "spar_loss", "dis_loss", "cons_loss", "reg_loss")


# ---------------------------------------------------------------- the losses and the schedule


def loss_weights(step, total_steps: int, warmup: float) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
    """b1, b2 and b3, float32, at optimizer step ``step`` of ``total_steps``. ``step`` may be a
    tensor.
    """
    t = tf.cast(step, tf.float32) / float(max(int(total_steps), 1))
    active = tf.cast(t > warmup, tf.float32)
    ramp1 = tf.minimum(tf.exp(RAMP_RATE * (t - DISTANCE_CENTRE)), 1.0)
    ramp2 = tf.minimum(tf.exp(RAMP_RATE * (t - CONSISTENCY_CENTRE)), 1.0)
    return active * ramp1, active * ramp2, active * (1.0 - ramp1)


def reconstruction_loss(reconstructions: tf.Tensor, images: tf.Tensor) -> tf.Tensor:
    return tf.reduce_mean(tf.square(tf.cast(reconstructions, tf.float32) - images))


def sparsity_loss(codes: tf.Tensor) -> tf.Tensor:
    """codes [N, k, d] -> mean over images and coordinates of sum_i |s_i * sum_{j != i} s_j|."""
    others = tf.reduce_sum(codes, axis=1, keepdims=True) - codes
    return tf.reduce_mean(tf.reduce_sum(tf.abs(codes * others), axis=1))


def pair_distances(codes1: tf.Tensor, codes2: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
    """codes [B, k, d] of x1 and x2 -> D [B, k] and the one-hot [B, k] of the changed subspace.

    D holds the squared distances per subspace. The changed subspace is the one whose D, divided
    by its mean distance in the batch, is largest.
    """
    squared = tf.reduce_sum(tf.square(codes1 - codes2), axis=-1)
    every = tf.stop_gradient(tf.transpose(tf.concat([codes1, codes2], axis=0), [1, 0, 2]))  # [k, 2B, d]
    norms = tf.reduce_sum(tf.square(every), axis=-1)
    gram = tf.matmul(every, every, transpose_b=True)
    euclidean = tf.sqrt(tf.maximum(norms[:, :, None] + norms[:, None, :] - 2.0 * gram, 0.0))
    scale = tf.reduce_mean(euclidean, axis=[1, 2]) + 1e-8  # [k]
    changed = tf.one_hot(
        tf.argmax(tf.stop_gradient(squared) / scale, axis=1), tf.shape(codes1)[1], dtype=tf.float32
    )
    return squared, changed


def distance_loss(squared: tf.Tensor, changed: tf.Tensor) -> tf.Tensor:
    """mean over [B, k] of (1 - M) D + 10 M relu(0.05 - D)."""
    return tf.reduce_mean((1.0 - changed) * squared + MARGIN_WEIGHT * changed * tf.nn.relu(MARGIN - squared))


def usage_loss(squared: tf.Tensor) -> tf.Tensor:
    """100 * mean_i (1/k - mean_b softmax(1000 D)[b, i])^2."""
    selection = tf.nn.softmax(USAGE_SHARPNESS * squared, axis=1)
    k = tf.cast(tf.shape(squared)[1], tf.float32)
    return USAGE_SCALE * tf.reduce_mean(tf.square(1.0 / k - tf.reduce_mean(selection, axis=0)))


def mix_codes(codes1: tf.Tensor, codes2: tf.Tensor, mixes: tf.Tensor) -> tf.Tensor:
    """The mixed codes [M, k, d]. Mix m = i * B + b takes subspace i from x1_b and the others from
    x2_b.
    """
    batch, k = tf.shape(codes1)[0], tf.shape(codes1)[1]
    pair, subspace = mixes % batch, mixes // batch
    take_first = tf.one_hot(subspace, k, dtype=codes1.dtype)[:, :, None]
    return take_first * tf.gather(codes1, pair) + (1.0 - take_first) * tf.gather(codes2, pair)


def consistency_loss(mixed: tf.Tensor, recode) -> tf.Tensor:
    """Of mixed codes [M, k, d]. ``recode`` maps z [M, d] to the codes of the decoded images [M, k,
    d].
    """
    return tf.reduce_mean(tf.square(tf.cast(recode(tf.reduce_sum(mixed, axis=1)), tf.float32) - mixed))


def draw_mixes(batch: tf.Tensor, k: int, seed: tf.Tensor) -> tf.Tensor:
    """2B distinct mix indices in [0, k B), int32 [M], drawn uniformly from a stateless seed."""
    count = tf.minimum(2 * batch, k * batch)
    keys = tf.random.stateless_uniform(tf.reshape(k * batch, [1]), seed=seed)
    return tf.argsort(keys)[:count]


# ---------------------------------------------------------------- the model


class SubspaceUsage(keras.metrics.Metric):
    """How often each subspace was the changed one (i*) since the last reset: counts [k].

    It is kept out of the model's ``metrics``. Keras resets those every epoch and the trainer's
    logger averages them as scalars. :class:`PMPMonitor` reads and resets it every log step.
    """

    def __init__(self, num_subspaces: int, name: str = "subspace_usage", **kwargs):
        super().__init__(name=name, **kwargs)
        self.counts = self.add_variable(
            shape=(num_subspaces,), initializer="zeros", name="counts", aggregation="sum"
        )

    def update_state(self, changed):
        self.counts.assign_add(tf.reduce_sum(tf.cast(changed, self.counts.dtype), axis=0))

    def result(self):
        return self.counts / tf.maximum(tf.reduce_sum(self.counts), 1.0)

    def reset_state(self):
        self.counts.assign(tf.zeros_like(self.counts))


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


class PMPMonitor(TrainingMonitor):
    """Writes PMP's histograms and grids under ``log_dir``, on pairs of the family's own stream.

    Every ``log_every`` steps: the subspace-usage histogram of the training pairs, and the
    fraction per subspace as scalars ``subspace_usage/<i>``. Every ``eval_every`` steps and at
    the last step: the grid of :meth:`PMPModel.swap_grid`. ``eval_every`` 0 means only at the
    end.
    """

    def __init__(self, config: ExperimentConfig, log_dir: str):
        super().__init__(log_dir, config.trainer.steps)
        self.config = config

    def on_train_begin(self, logs=None):
        self.model.usage.reset_state()

    def write(self, step: int, logs: dict) -> None:
        if self.due(step, self.config.trainer.log_every):
            counts = np.asarray(self.model.usage.counts.numpy(), np.float64)
            if counts.sum() > 0:
                fractions = counts / counts.sum()
                indices = np.repeat(np.arange(counts.size), np.rint(counts).astype(np.int64))
                tf.summary.histogram("subspace_usage", indices, buckets=counts.size)
                for i, value in enumerate(fractions):
                    tf.summary.scalar(f"subspace_usage/{i}", value)
            self.model.usage.reset_state()
        if self.due(step, self.config.trainer.eval_every):
            pairs = self.fixed_batch(self.config, "pairs", GRID_PAIRS)
            grid = self.model.swap_grid(pairs["x1"], pairs["x2"])
            tf.summary.image(
                "reconstruction_and_swaps",
                grid[None],
                max_outputs=1,
                description="per pair: x1, its reconstruction, x1 with subspace i of x2 (i = 1..k), "
                "the reconstruction of x2, x2",
            )


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
