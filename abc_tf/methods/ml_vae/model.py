"""ML-VAE (``--method=ml_vae``), trained on "sets" batches.

ML-VAE is Bouchacourt, Tomioka and Nowozin, "Multi-Level Variational Autoencoder", AAAI 2018
(docs/PAPERS.md section P5). Each stack of ``set_a`` [P, N, H, W, C] is one group of N images.
Its images share the content, such as the digit on MNIST, and differ in style. Only ``set_a`` is
read; ``set_b`` is ignored. The comment under the imports gives the model, the loss and the
likelihoods, with what is ours.

A run keeps ``encoder`` (images -> the style posterior mean), ``content`` (images -> one image's
content posterior mean, before its group is accumulated), ``posterior`` (all four outputs) and
``decoder``. The style mean is what the ABC paper compares on MNIST (Fig. 4 / S7) and on pose,
where the group is one object instance and pose is the style.
Logs: ``loss``, ``reconstruction`` (-log p(x | s, c), nats per image), ``kl_style`` (per image)
and ``kl_content`` (per group, unweighted).
"""

from __future__ import annotations

import math

import keras
import tensorflow as tf

import models
from abc_tf import data, optimizers
from abc_tf.config import ExperimentConfig
from abc_tf.methods.base import ImageNeed, Method, MethodModel, draw_rows, to_float_images
from abc_tf.methods.distributions import bernoulli_log_likelihood, gaussian_kl
from abc_tf.methods.ml_vae import PRESETS, MlVaeConfig

# The group's content posterior is the normalised product of its members' Gaussians, in log
# space as the authors' accumulate_group_evidence (utils.py L13-51). content_sample="image" draws
# it once per image as their final code does (the same ELBO, another estimator); sample_std < 1,
# with which their README reports the decoder stops ignoring the content, bounds a less noisy
# decoder input instead of the ELBO.
# The loss is the negative ELBO per image [ours]: the authors' sum over the batch divided by the
# groups (training.py L33-49) is N times it, the same optimum under Adam, and per image it reads as
# the VAE's nats; the content KL counts once per group. likelihood="gaussian" is theirs (a
# tanh-squashed log-variance, training.py L39-45; their 1e-12 is below float32's resolution there);
# "bernoulli" is ours. networks="conv64" is the 64 x 64 pair the ABC authors used for both VAE
# baselines (supplement L217).
from models import vae64_networks
from models import ml_vae_networks

LOG_NAMES = ("loss", "reconstruction", "kl_style", "kl_content")


# ---------------------------------------------------------------- the ELBO terms


def group_posterior(mean: tf.Tensor, log_variance: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
    """The normalised product of the N Gaussians of each group.

    mean, log variance [P, N, d] -> [P, d], [P, d]. Precision = sum_i exp(-log_variance_i),
    computed as a logsumexp. The mean is precision-weighted: sum_i softmax_i(-log_variance)
    mean_i.
    """
    log_precision = tf.reduce_logsumexp(-log_variance, axis=1)
    weights = tf.nn.softmax(-log_variance, axis=1)
    return tf.reduce_sum(weights * mean, axis=1), -log_precision


def pixel_log_likelihood(images: tf.Tensor, decoded, likelihood: str) -> tf.Tensor:
    """log p(x | s, c) [B] of images [B, H, W, C] in [0, 1], summed over pixels.

    ``decoded``: the decoder's [mean, log_variance] for "gaussian", or its logits for
    "bernoulli".
    """
    x = tf.cast(images, tf.float32)
    if likelihood == "bernoulli":
        return bernoulli_log_likelihood(x, tf.cast(decoded, tf.float32))
    mean, log_variance = (tf.cast(value, tf.float32) for value in decoded)
    per_pixel = -0.5 * (math.log(2.0 * math.pi) + log_variance + tf.square(x - mean) * tf.exp(-log_variance))
    return tf.reduce_sum(tf.reshape(per_pixel, [tf.shape(x)[0], -1]), axis=1)


def elbo_terms(
    posterior: keras.Model,
    decoder: keras.Model,
    likelihood: str,
    sets: tf.Tensor,
    noise: dict[str, tf.Tensor],
    sample_std: float = 1.0,
) -> dict[str, tf.Tensor]:
    """One pass of inference and generation for float images ``sets`` [P, N, H, W, C], a group per
    set.

    noise: standard normal draws {"style": [P, N, d_s], "content": [P, K, d_c]}. K is 1 for one
    content draw per group, or N for one per image. z = mean + exp(log_variance / 2) noise; the
    content's noise is scaled by ``sample_std``.
    Returns float32 tensors:
      - per image [P, N]: "reconstruction", i.e. -log p(x | s, c), and "kl_style";
      - per group [P]: "kl_content";
      - per image [P, N, d]: "style_mean", "style_log_variance", "content_mean",
        "content_log_variance";
      - per group [P, d_c]: "group_mean", "group_log_variance";
      - the draws "style" [P, N, d_s] and "content" [P, N, d_c].
    """
    shape = tf.shape(sets)
    groups, size = shape[0], shape[1]
    flat = tf.reshape(sets, tf.concat([[groups * size], shape[2:]], 0))
    codes = [tf.cast(value, tf.float32) for value in posterior(flat)]
    out = {
        name: tf.reshape(value, [groups, size, -1])
        for name, value in zip(ml_vae_networks.ENCODER_OUTPUTS, codes)
    }
    out["group_mean"], out["group_log_variance"] = group_posterior(
        out["content_mean"], out["content_log_variance"]
    )
    out["style"] = out["style_mean"] + tf.exp(0.5 * out["style_log_variance"]) * noise["style"]
    content = out["group_mean"][:, None] + tf.exp(0.5 * out["group_log_variance"])[:, None] * (
        sample_std * noise["content"]
    )
    out["content"] = tf.broadcast_to(content, [groups, size, tf.shape(content)[-1]])
    decoded = decoder(
        [tf.reshape(out["style"], [groups * size, -1]), tf.reshape(out["content"], [groups * size, -1])]
    )
    out["reconstruction"] = tf.reshape(-pixel_log_likelihood(flat, decoded, likelihood), [groups, size])
    out["kl_style"] = gaussian_kl(out["style_mean"], out["style_log_variance"])
    out["kl_content"] = gaussian_kl(out["group_mean"], out["group_log_variance"])
    return out


def draw_noise(
    seed: tf.Tensor, groups, size, style_dim: int, content_dim: int, per_image: bool
) -> dict[str, tf.Tensor]:
    """The standard normal draws of :func:`elbo_terms` for ``groups`` groups of ``size``.

    From a stateless seed [2]: "style" [groups, size, d_s], "content" [groups, size or 1, d_c].
    Under a distribution strategy, this replica's rows of the global batch's draws
    (``draw_rows``).
    """
    style_seed, content_seed = tf.unstack(tf.random.experimental.stateless_split(seed, 2))
    per_group = size if per_image else 1

    def normal(dim: int, seed: tf.Tensor):
        return lambda rows: tf.random.stateless_normal(tf.stack([rows, dim]), seed=seed)

    style = draw_rows(normal(style_dim, style_seed), groups * size)
    content = draw_rows(normal(content_dim, content_seed), groups * per_group)
    return {
        "style": tf.reshape(style, [groups, size, style_dim]),
        "content": tf.reshape(content, [groups, per_group, content_dim]),
    }


# ---------------------------------------------------------------- the model


class MlVaeModel(MethodModel):
    """ML-VAE on batches {"set_a": [P, N, H, W, C], ...}. ``set_b`` is ignored.

    Args:
      posterior: images -> [style mean, style log variance, content mean, content log variance].
      decoder: [style, content] -> the parameters of the ``likelihood``.
      likelihood: "gaussian" or "bernoulli".
      content_per_image: one content draw per image, as the authors' code does, instead of per
      group.
      kl_weight: weight of both KL terms.
      sample_std: standard deviation of the content draw's noise.
      seed: of the reparameterisation noise; stateless with the step.
    """

    def __init__(
        self,
        posterior: keras.Model,
        decoder: keras.Model,
        likelihood: str = "gaussian",
        content_per_image: bool = False,
        kl_weight: float = 1.0,
        sample_std: float = 1.0,
        seed: int = 0,
        **kwargs,
    ):
        super().__init__(seed=seed, **kwargs)
        self.posterior = posterior
        self.decoder = decoder
        self.representation = ml_vae_networks.mean_network(posterior, "style_mean", name="encoder")
        self.content = ml_vae_networks.mean_network(posterior, "content_mean", name="content")
        self.likelihood = likelihood
        self.content_per_image = bool(content_per_image)
        self.kl_weight = float(kl_weight)
        self.sample_std = float(sample_std)
        self.style_dim = int(posterior.output_shape[0][-1])
        self.content_dim = int(posterior.output_shape[2][-1])
        self.track(LOG_NAMES)

    def networks(self) -> dict[str, keras.Model]:
        return {
            "encoder": self.representation,
            "content": self.content,
            "posterior": self.posterior,
            "decoder": self.decoder,
        }

    def noise_at(self, step, groups, size) -> dict[str, tf.Tensor]:
        """The reparameterisation noise of step ``step``: :func:`draw_noise` from the seed and the
        step.
        """
        seed = self.step_seed(step)
        return draw_noise(seed, groups, size, self.style_dim, self.content_dim, self.content_per_image)

    def compute_terms(
        self, batch: dict[str, tf.Tensor], step: tf.Tensor, training: bool
    ) -> dict[str, tf.Tensor]:
        """The negative ELBO per image of set A's groups, as the module docstring defines it.

        No layer of the networks acts differently in training.
        """
        del training
        sets = to_float_images(batch["set_a"])
        shape = tf.shape(sets)
        out = elbo_terms(
            self.posterior,
            self.decoder,
            self.likelihood,
            sets,
            self.noise_at(step, shape[0], shape[1]),
            self.sample_std,
        )
        terms = {name: tf.reduce_mean(out[name]) for name in ("reconstruction", "kl_style", "kl_content")}
        group_size = tf.cast(shape[1], tf.float32)
        terms["loss"] = terms["reconstruction"] + self.kl_weight * (
            terms["kl_style"] + terms["kl_content"] / group_size
        )
        return terms


# ---------------------------------------------------------------- the declaration


def images(config: ExperimentConfig) -> ImageNeed | None:
    """The MNIST MLPs take any size; conv64 takes 64 x 64."""
    if config.method.networks != "conv64":
        return None
    side = vae64_networks.IMAGE_SIZE
    return ImageNeed(
        (side, side, None),
        "--method.networks=conv64",
        "Use --method.networks=mnist (the authors' MLPs, any size), or data of 64 x 64 images "
        "(e.g. --data.image_size=64).",
    )


def build_networks(config: ExperimentConfig, image_shape: tuple[int, int, int]) -> dict[str, keras.Model]:
    """The posterior and the decoder, built in a fixed order: one seed, one set of weights."""
    method = config.method
    if method.networks == "conv64":
        names = ("ml_vae_encoder_64", "ml_vae_decoder_64")
        dims = dict(
            style_dim=method.style_dim, content_dim=method.content_dim, base_channels=method.base_channels
        )
    else:
        names = ("ml_vae_encoder", "ml_vae_decoder")
        dims = dict(style_dim=method.style_dim, content_dim=method.content_dim, units=method.hidden_units)
    return {
        "posterior": models.build(names[0], input_shape=tuple(image_shape), **dims),
        "decoder": models.build(
            names[1], output_shape=tuple(image_shape), likelihood=method.likelihood, **dims
        ),
    }


def build(config: ExperimentConfig, image_shape: tuple[int, int, int]) -> MlVaeModel:
    """The networks and Adam at the config's rate.

    The Adam is the authors': betas 0.9 and 0.999, PyTorch's epsilon.
    """
    networks = build_networks(config, image_shape)
    model = MlVaeModel(
        networks["posterior"],
        networks["decoder"],
        likelihood=config.method.likelihood,
        content_per_image=config.method.content_sample == "image",
        kl_weight=config.method.kl_weight,
        sample_std=config.method.sample_std,
        seed=config.trainer.seed,
    )
    # The authors' optim.Adam (training.py L100-104) with PyTorch's default epsilon.
    model.compile_for(
        config.trainer, optimizers.run_adam(config.trainer, epsilon=optimizers.PYTORCH_ADAM_EPSILON)
    )
    return model


def variant(config: ExperimentConfig) -> str:
    """The settings that differ from the preset's choices, which are the authors', in words."""
    method = config.method
    changed = []
    if method.likelihood == "bernoulli":
        changed.append("Bernoulli likelihood")
    if method.content_sample == "image":
        changed.append("one content draw per image")
    if method.kl_weight != 1.0:
        changed.append(f"KL weight {method.kl_weight:g}")
    if method.sample_std != 1.0:
        changed.append(f"content noise std {method.sample_std:g}")
    return ", ".join(changed)


def supervision(config: ExperimentConfig) -> str:
    """What the groups tell the method: which images share the content.

    The data family names it in its ``set_shares``.
    """
    return (
        "group membership: which images share the content "
        f"({data.get_family(config.data.family).set_shares}), from the sets"
    )


METHOD = Method(
    name="ml_vae",
    config=MlVaeConfig,
    presets=PRESETS,
    smallest_run=PRESETS["mnist_ml_vae_quick"].replace(
        name="ml_vae_smoke",
        source="procedural",
        jit_compile=False,
        set_size=8,
        pairs_per_step=2,
        steps=4,
        log_every=2,
    ),
    quick_run=PRESETS["mnist_ml_vae_quick"],
    build=build,
    supervision=supervision,
    images=images,
    variant=variant,
)
