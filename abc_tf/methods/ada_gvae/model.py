"""Ada-GVAE (``--method=ada_gvae``; Locatello et al., ICML 2020; docs/PAPERS.md section P6).

It trains on "pairs" batches {"x1", "x2"} [B, H, W, C]: two images that share all factors but some.
Both images are encoded to diagonal Gaussians. Some latent dimensions are shared: they take the
pair's averaged posterior in both images. The rest keep their own. The loss is the beta-VAE loss
on both images. The comment under the imports restates the authors' steps, not copied.
Source: disentanglement_lib, ``methods/weak/weak_vae.py``; the package docstring names the files.

A run keeps ``encoder`` (images -> the posterior means, which every evaluator reads),
``posterior`` (images -> [means, log-variances]) and ``decoder`` (z -> logits). Logs: ``loss``,
``reconstruction`` (nats per image), ``kl`` (per image, of the aggregated posteriors) and
``shared_dimensions`` (per pair, how many latent dimensions were averaged).
"""

from __future__ import annotations

import math

import keras
import tensorflow as tf

from abc_tf import data, optimizers
from abc_tf.config import ExperimentConfig
from abc_tf.methods.ada_gvae import AdaGvaeConfig, PRESETS, networks

# The authors' steps (disentanglement_lib's weak_vae.py), restated, not copied: pair_divergence is
# their compute_kl, twice KL(q(z_i | x1) || q(z_i | x2)), of which only the binning is used.
# "argmax" (Ada-GVAE) cuts it into two equal-width bins between the pair's extremes, as
# tf.histogram_fixed_width_bins does: the upper bin keeps its own posterior, every other dimension
# is shared, and all are shared when every d_i is equal (0 / 0 gives no index 1). "labels" (GVAE)
# keeps the dimension of the factor simple_dynamics changed last. "group_vae" averages the two
# Gaussians, "mlvae" takes their product's mean with twice its variance. The loss is the mean of
# the two images' Bernoulli reconstruction + beta KL of their aggregated posteriors.
# The mask is boolean, so gradients reach both posteriors only through the averaged ones, as in
# the authors' graph.
from abc_tf.methods.base import ImageNeed, Method, MethodModel, draw_rows, to_float_images
from abc_tf.methods.distributions import bernoulli_log_likelihood, gaussian_kl

LOG_NAMES = ("loss", "reconstruction", "kl", "shared_dimensions")
LABEL_KEY = (
    "changed_factor"  # int [B] of a pairs batch: the index of the factor the pair changes ("labels" only)
)
ADAM_BETAS, ADAM_EPSILON = (0.9, 0.999), 1e-8  # dlib shared.gin: vae/AdamOptimizer beta1, beta2, epsilon


# ---------------------------------------------------------------- the pair's posteriors


def pair_divergence(
    mean1: tf.Tensor, log_var1: tf.Tensor, mean2: tf.Tensor, log_var2: tf.Tensor
) -> tf.Tensor:
    """Per dimension [B, d]: v1/v2 + (m2 - m1)^2/v2 - 1 + log v2 - log v1, i.e. 2 KL(q1 || q2).

    Source: the authors' ``compute_kl``. The ratios are taken as exp of log-variance differences.
    """
    return (
        tf.exp(log_var1 - log_var2) + tf.square(mean2 - mean1) * tf.exp(-log_var2) - 1.0 + log_var2 - log_var1
    )


def adaptive_kept(divergence: tf.Tensor) -> tf.Tensor:
    """bool [B, d]: True where a dimension keeps its own posterior.

    Those are the upper of two equal-width bins between each row's smallest and largest
    divergence, as ``tf.histogram_fixed_width_bins(row, [min, max], nbins=2) == 1`` computes
    them. A row of equal divergences keeps none; see point 3 of the module docstring.
    """
    low = tf.reduce_min(divergence, axis=-1, keepdims=True)
    high = tf.reduce_max(divergence, axis=-1, keepdims=True)
    width = high - low
    spread = width > 0
    scaled = (divergence - low) / tf.where(spread, width, tf.ones_like(width))
    return tf.logical_and(spread, tf.floor(2.0 * scaled) >= 1.0)


def label_kept(labels: tf.Tensor, latent_dim: int) -> tf.Tensor:
    """bool [B, d]: True at the index of each pair's changed factor (``aggregate_labels``)."""
    return tf.cast(tf.one_hot(tf.cast(labels, tf.int32), latent_dim, dtype=tf.int32), tf.bool)


def averaged_posterior(
    mean1: tf.Tensor, log_var1: tf.Tensor, mean2: tf.Tensor, log_var2: tf.Tensor, averaging: str
) -> tuple[tf.Tensor, tf.Tensor]:
    """Mean and log-variance [B, d] of the shared dimensions; see point 4 of the module docstring."""
    log_sum = tf.reduce_logsumexp(tf.stack([log_var1, log_var2]), axis=0)  # log(v1 + v2)
    if averaging == "group_vae":
        return 0.5 * (mean1 + mean2), log_sum - math.log(2.0)
    # mlvae: v = 2 v1 v2 / (v1 + v2); mean = (m1 v2 + m2 v1) / (v1 + v2),
    # weights v2 / (v1 + v2) = sigmoid(lv2 - lv1).
    weight1 = tf.sigmoid(log_var2 - log_var1)
    return weight1 * mean1 + (1.0 - weight1) * mean2, math.log(2.0) + log_var1 + log_var2 - log_sum


def pair_terms(
    posterior: keras.Model,
    decoder: keras.Model,
    x1: tf.Tensor,
    x2: tf.Tensor,
    noise: tf.Tensor,
    aggregation: str,
    averaging: str,
    labels: tf.Tensor | None = None,
) -> dict[str, tf.Tensor]:
    """One pass over a batch of pairs.

    Takes float images ``x1``, ``x2`` [B, H, W, C] in [0, 1], standard normal ``noise`` [B, 2, d]
    for image 1 and image 2, and ``labels`` int [B] for "labels" only.
    Returns, per pair [B]: "reconstruction" = (R1 + R2) / 2, "kl" = (K1 + K2) / 2 and
    "shared_dimensions". And [B, d]: "divergence", bool "kept", the encoder's "mean1",
    "log_var1", "mean2", "log_var2", and "z1", "z2", drawn from the aggregated posteriors.
    Computed in the networks' output dtype: float32, or float64 for a float64 network.
    """
    pairs = tf.shape(x1)[0]
    mean, log_var = posterior(tf.concat([x1, x2], axis=0))
    mean1, mean2 = mean[:pairs], mean[pairs:]
    log_var1, log_var2 = log_var[:pairs], log_var[pairs:]
    divergence = pair_divergence(mean1, log_var1, mean2, log_var2)
    if aggregation == "labels":
        kept = label_kept(labels, int(mean.shape[-1]))
    else:
        kept = adaptive_kept(tf.stop_gradient(divergence))
    shared_mean, shared_log_var = averaged_posterior(mean1, log_var1, mean2, log_var2, averaging)
    out = {
        "divergence": divergence,
        "kept": kept,
        "mean1": mean1,
        "log_var1": log_var1,
        "mean2": mean2,
        "log_var2": log_var2,
    }
    noise = tf.cast(noise, mean.dtype)
    codes, kls = [], []
    for index, (own_mean, own_log_var) in enumerate(((mean1, log_var1), (mean2, log_var2))):
        aggregated_mean = tf.where(kept, own_mean, shared_mean)
        aggregated_log_var = tf.where(kept, own_log_var, shared_log_var)
        codes.append(aggregated_mean + tf.exp(0.5 * aggregated_log_var) * noise[:, index])
        kls.append(gaussian_kl(aggregated_mean, aggregated_log_var))
    out["z1"], out["z2"] = codes
    logits = decoder(tf.concat(codes, axis=0))
    nll = -bernoulli_log_likelihood(tf.concat([x1, x2], axis=0), logits)
    out["reconstruction"] = 0.5 * (nll[:pairs] + nll[pairs:])
    out["kl"] = 0.5 * (kls[0] + kls[1])
    out["shared_dimensions"] = tf.reduce_sum(tf.cast(tf.logical_not(kept), mean.dtype), axis=-1)
    return out


def draw_noise(seed: tf.Tensor, pairs, latent_dim: int) -> tf.Tensor:
    """Standard normal [pairs, 2, latent_dim] from a stateless seed [2].

    Under a distribution strategy, this replica's rows of the global batch's draws
    (``draw_rows``).
    """
    return draw_rows(
        lambda rows: tf.random.stateless_normal(tf.stack([rows, 2, latent_dim]), seed=seed), pairs
    )


# ---------------------------------------------------------------- the model


class AdaGvaeModel(MethodModel):
    """Ada-GVAE, GVAE or ML-VAE's averaging on pairs batches {"x1", "x2"[, LABEL_KEY]}.

    Args:
      posterior: images -> [means, log-variances] [B, d].
      decoder: z [B, d] -> Bernoulli logits of the images.
      beta: weight of the KL terms.
      aggregation: "argmax" for adaptive, or "labels" for the batches' LABEL_KEY.
      averaging: "group_vae" or "mlvae".
      seed: of the reparameterisation noise; stateless with the step.
    """

    def __init__(
        self,
        posterior: keras.Model,
        decoder: keras.Model,
        beta: float = 1.0,
        aggregation: str = "argmax",
        averaging: str = "group_vae",
        seed: int = 0,
        **kwargs,
    ):
        super().__init__(seed=seed, **kwargs)
        self.posterior = posterior
        self.decoder = decoder
        self.representation = networks.mean_network(posterior, name="encoder")
        self.beta = float(beta)
        self.aggregation, self.averaging = aggregation, averaging
        self.latent_dim = int(posterior.outputs[0].shape[-1])
        self.track(LOG_NAMES)

    def networks(self) -> dict[str, keras.Model]:
        return {"encoder": self.representation, "posterior": self.posterior, "decoder": self.decoder}

    def noise_at(self, step, pairs) -> tf.Tensor:
        """The reparameterisation noise [pairs, 2, d] of step ``step``: :func:`draw_noise` from the
        seed and the step.
        """
        seed = self.step_seed(step)
        return draw_noise(seed, pairs, self.latent_dim)

    def compute_terms(
        self, batch: dict[str, tf.Tensor], step: tf.Tensor, training: bool
    ) -> dict[str, tf.Tensor]:
        """The beta-VAE loss of both images of every pair, as the module docstring defines it.

        No layer acts differently in training.
        """
        del training
        labels = None
        if self.aggregation == "labels":
            if LABEL_KEY not in batch:
                raise ValueError(
                    f"--method.aggregation=labels reads each pair's changed factor ({LABEL_KEY!r}), which "
                    f"this data's pairs batches do not carry (they hold {', '.join(sorted(batch))}); use "
                    "--method.aggregation=argmax."
                )
            labels = batch[LABEL_KEY]
        x1, x2 = to_float_images(batch["x1"]), to_float_images(batch["x2"])
        out = pair_terms(
            self.posterior,
            self.decoder,
            x1,
            x2,
            self.noise_at(step, tf.shape(x1)[0]),
            self.aggregation,
            self.averaging,
            labels,
        )
        terms = {
            name: tf.reduce_mean(tf.cast(out[name], tf.float32))
            for name in ("reconstruction", "kl", "shared_dimensions")
        }
        terms["loss"] = terms["reconstruction"] + self.beta * terms["kl"]
        return terms


# ---------------------------------------------------------------- the declaration


def images(config: ExperimentConfig) -> ImageNeed:
    """disentanglement_lib's networks take 64 x 64 images of any channels."""
    side = networks.IMAGE_SIZE
    return ImageNeed((side, side, None), f"--method={config.method.name} (disentanglement_lib's networks)")


def check_config(config: ExperimentConfig) -> None:
    """The networks fit the family's images, and "labels" has a latent dimension per factor.

    Checked before any data is read.
    """
    family = data.get_family(config.data.family)
    if config.method.aggregation == "labels":
        factors = family.known_factors
        if factors is None:
            raise ValueError(
                f"--method.aggregation=labels: data {config.data.family!r} has no known factors to label "
                "the pairs with; use --method.aggregation=argmax."
            )
        if config.method.latent_dim < len(factors.names):
            raise ValueError(
                f"--method.aggregation=labels makes latent dimension i learn factor i: "
                f"--method.latent_dim={config.method.latent_dim} is below the {len(factors.names)} factors "
                f"of data {config.data.family!r}."
            )
        if not config.batch.pair_labels:
            raise ValueError(
                f"--method.aggregation=labels reads each pair's changed factor ({LABEL_KEY!r}): add "
                "--batch.pair_labels, or use --method.aggregation=argmax."
            )


def build(config: ExperimentConfig, image_shape: tuple[int, int, int]) -> AdaGvaeModel:
    """The networks and Adam at the config's rate, with the authors' betas and epsilon.

    The encoder is built first, then the decoder: one seed, one set of weights.
    """
    method = config.method
    posterior = networks.gaussian_encoder(method.latent_dim, tuple(image_shape))
    decoder = networks.bernoulli_decoder(method.latent_dim, tuple(image_shape))
    model = AdaGvaeModel(
        posterior,
        decoder,
        beta=method.beta,
        aggregation=method.aggregation,
        averaging=method.averaging,
        seed=config.trainer.seed,
    )
    model.compile_for(config.trainer, optimizers.run_adam(config.trainer, ADAM_BETAS, ADAM_EPSILON))
    return model


def variant(config: ExperimentConfig) -> str:
    """The authors' name of the configured model where it is not Ada-GVAE: the gin names of
    weak_vae.py.
    """
    method = config.method
    name = {
        ("argmax", "group_vae"): "",
        ("labels", "group_vae"): "GVAE with the changed factor",
        ("argmax", "mlvae"): "Ada-ML-VAE",
        ("labels", "mlvae"): "ML-VAE with the changed factor",
    }
    return name[(method.aggregation, method.averaging)]


def supervision(config: ExperimentConfig) -> str:
    """What the pairs tell the method."""
    if config.method.aggregation == "labels":
        return "pairs that differ in one factor, and which factor it is"
    return "pairs that differ in one factor, which one unknown (Locatello et al. 2020 weak supervision)"


METHOD = Method(
    name="ada_gvae",
    config=AdaGvaeConfig,
    presets=PRESETS,
    # The smallest run, for tests and readiness checks: 4 steps of 2 built-in procedural Shapes3D
    # pairs (64 x 64, the only size the family streams), no measurement before the end, 64
    # labelled images for the end-of-run one. No file is read.
    smallest_run=PRESETS["shapes3d_ada_gvae"].replace(
        name="ada_gvae_smoke", steps=4, log_every=2, eval_every=0, eval_images=64, pairs_per_step=2
    ),
    quick_run=PRESETS["shapes3d_ada_gvae_quick"],
    build=build,
    supervision=supervision,
    check_config=check_config,
    variant=variant,
    images=images,
)
