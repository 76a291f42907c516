"""CC-VAE (``--method=cc_vae``), trained on "sets" batches.

CC-VAE is Jha et al., "Disentangling Factors of Variation with Cycle-Consistent Variational
Auto-Encoders", ECCV 2018 (docs/PAPERS.md section P5). The sources and what is ours are in
``abc_tf/methods/cc_vae/__init__.py``. Each stack of ``set_a`` [P, N, H, W, C] shares the
*specified* factor, such as the digit on MNIST. The *unspecified* code z is the rest, the style.
The encoder gives a Gaussian posterior q(z | x) = N(mu(x), diag exp(lv(x))) and a deterministic
specified code s(x). The decoder g(z, s) gives images in [0, 1]. A step is the authors'
iteration: a forward and a reverse cycle, two Adam updates in order (comment under the imports).

Logs: ``loss`` = forward_loss + reverse_loss, ``reconstruction``, ``kl`` and ``reverse_cycle``,
unweighted as the authors log them. A run keeps ``encoder`` (images -> mu, the style the ABC
paper compares in Fig. 4 / S7, or the pose on pose data), ``specified`` (images -> s),
``posterior`` (all three outputs) and ``decoder`` ([z, s] -> images).
"""

from __future__ import annotations

import keras
import tensorflow as tf

import models
from abc_tf import data, optimizers
from abc_tf.config import ExperimentConfig
from abc_tf.methods.base import (
    ImageNeed,
    Method,
    MethodModel,
    Update,
    draw_rows,
    loss_scaled,
    to_float_images,
)
from abc_tf.methods.cc_vae import CcVaeConfig, PRESETS

# 1. Forward cycle: the encoder and decoder, with compile's optimizer, whose steps number the run.
#    A shuffle of each stack from (seed, step) makes K = floor(N / 2) disjoint pairs (x1, x2), at
#    positions 2k and 2k + 1. With z_i = mu(x_i) + exp(lv(x_i) / 2) e_i, e_i ~ N(0, I), each
#    member is rebuilt from its own z and its partner's s:
#
#      reconstruction = mean_pairs,pixels (g(z1, s2) - x1)^2 + mean_pairs,pixels (g(z2, s1) - x2)^2
#      kl = (sum over the 2 P K images of KL(q(z | x) || N(0, I))) / (P K x pixels)
#      forward_loss = reconstruction_weight x reconstruction + kl_weight x kl
#
#    Source: training.py L128-150; their batch is the P K pairs.
# 2. Reverse cycle, after the forward update: the encoder's convolutions and style-mean head, with
#    the second optimizer. For pair k of stack p, z_k ~ N(0, I) is decoded twice. Once with the
#    specified code of the pair's first member. Once with that of the image of set_b's stack p at
#    the second member's position, another group. Both codes carry no gradient. The two images are
#    re-encoded, and
#
#      reverse_cycle = mean_k,dims |mu(g(z_k, s(a_k))) - mu(g(z_k, s(b_k)))|
#      reverse_loss = reverse_cycle_weight x reverse_cycle
#
#    Source: training.py L157-184. The decoder, the specified head and the log-variance head get
#    no gradient from it. The authors' reverse optimiser holds the encoder only. Both heads get a
#    zero gradient there, since the codes are detached and the log-variance unread. That leaves
#    Adam's step at zero.
#
# The forward update draws the shuffle, e and z from (seed, step) and hands them to the reverse
# one. A resumed run draws what an unbroken one would. Under a distribution strategy each replica
# takes its rows of the global batch's draws (draw_rows). The logged loss takes the reverse cycle
# after the forward update.
#
# networks="mnist" is the authors' MNIST convolutional networks (models/cc_vae_networks.py,
# 28 x 28). "conv64" is the 64 x 64 networks (models/vae64_networks.py). There the ABC authors
# followed CC-VAE's supplement (L217).
from abc_tf.methods.distributions import gaussian_kl
from models import vae64_networks
from models import cc_vae_networks

LOG_NAMES = ("loss", "reconstruction", "kl", "reverse_cycle")
DRAWS = ("order", "style_noise", "z")


# ---------------------------------------------------------------- the cycles


def _flat(images: tf.Tensor) -> tf.Tensor:
    """[P, K, H, W, C] -> [P K, H, W, C]."""
    shape = tf.shape(images)
    return tf.reshape(images, tf.concat([[shape[0] * shape[1]], shape[2:]], 0))


def _encode(posterior: keras.Model, images: tf.Tensor, training: bool) -> list[tf.Tensor]:
    """The posterior's three outputs, float32 [P K, d], of float images [P, K, H, W, C]."""
    return [tf.cast(value, tf.float32) for value in posterior(_flat(images), training=training)]


def forward_cycle(
    posterior: keras.Model,
    decoder: keras.Model,
    sets: tf.Tensor,
    draws: dict[str, tf.Tensor],
    training: bool = True,
) -> dict[str, tf.Tensor]:
    """The forward cycle of float images ``sets`` [P, N, H, W, C] in [0, 1], a group per stack.

    draws: "order" int [P, 2K], the stack's positions in pair order; pair k is 2k and 2k + 1.
    "style_noise" [P, 2K, d_z] is the reparameterisation noise e of the images in that order.
    Returns float32 scalars "reconstruction" and "kl", as the module docstring defines them. Per
    image in pair order [P, 2K]: "squared_error", a mean over pixels, and "kl_image". And
    "reconstructed" [P, 2K, H, W, C].
    """
    images = tf.gather(sets, draws["order"], batch_dims=1)
    shape = tf.shape(images)
    groups, members = shape[0], shape[1]
    style_mean, style_log_variance, class_code = _encode(posterior, images, training)
    noise = tf.reshape(draws["style_noise"], tf.shape(style_mean))
    style = style_mean + tf.exp(0.5 * style_log_variance) * noise
    # Each member takes its partner's specified code: swap the two members of every pair.
    partner = tf.reshape(
        tf.reverse(tf.reshape(class_code, [groups * members // 2, 2, -1]), axis=[1]), tf.shape(class_code)
    )
    reconstructed = tf.cast(decoder([style, partner], training=training), tf.float32)
    flat = _flat(images)
    squared_error = tf.reduce_mean(
        tf.reshape(tf.square(reconstructed - flat), [groups * members, -1]), axis=1
    )
    pixels = tf.cast(tf.reduce_prod(shape[2:]), tf.float32)
    kl_image = gaussian_kl(style_mean, style_log_variance)
    # Two means over the pairs' members (first, second) = twice the mean over all; the KL sum
    # over both members divided by pairs x pixels = twice the mean over all / pixels.
    return {
        "reconstruction": 2.0 * tf.reduce_mean(squared_error),
        "kl": 2.0 * tf.reduce_mean(kl_image) / pixels,
        "squared_error": tf.reshape(squared_error, [groups, members]),
        "kl_image": tf.reshape(kl_image, [groups, members]),
        "reconstructed": tf.reshape(reconstructed, shape),
    }


def reverse_cycle(
    posterior: keras.Model,
    decoder: keras.Model,
    set_a: tf.Tensor,
    set_b: tf.Tensor,
    draws: dict[str, tf.Tensor],
    training: bool = True,
) -> dict[str, tf.Tensor]:
    """The reverse cycle of float images ``set_a``, ``set_b`` [P, N, H, W, C], two groups per p.

    draws: "order" [P, 2K] as in :func:`forward_cycle`. Pair k takes ``set_a[p, order[p, 2k]]``
    and ``set_b[p, order[p, 2k + 1]]``. "z" [P, K, d_z] ~ N(0, I).
    Returns the float32 scalar "reverse_cycle" and "generated" [2, P K, H, W, C], from a's codes
    and from b's. "style_means" [2, P K, d_z] are their re-encoded style means.
    """
    first = tf.gather(set_a, draws["order"][:, 0::2], batch_dims=1)
    second = tf.gather(set_b, draws["order"][:, 1::2], batch_dims=1)
    both = tf.concat([first, second], axis=0)  # [2P, K, ...]: no layer mixes images, so one pass
    class_code = tf.stop_gradient(_encode(posterior, both, training)[2])
    z = tf.reshape(draws["z"], [-1, tf.shape(draws["z"])[-1]])
    generated = tf.cast(decoder([tf.concat([z, z], axis=0), class_code], training=training), tf.float32)
    style_mean = tf.cast(posterior(generated, training=training)[0], tf.float32)
    style_means = tf.reshape(style_mean, [2, tf.shape(z)[0], -1])
    return {
        "reverse_cycle": tf.reduce_mean(tf.abs(style_means[0] - style_means[1])),
        "generated": tf.reshape(generated, tf.concat([[2, tf.shape(z)[0]], tf.shape(generated)[1:]], 0)),
        "style_means": style_means,
    }


def draw_step(seed: tf.Tensor, groups, size, style_dim: int) -> dict[str, tf.Tensor]:
    """The random draws of one step from a stateless seed [2], for ``groups`` stacks of ``size``.

    "order" int32 [groups, 2K]: the first 2K = 2 floor(size / 2) positions of a uniform shuffle
    of each stack, by argsort of uniform draws.
    "style_noise" [groups, 2K, d_z] and "z" [groups, K, d_z]: standard normal.
    Under a distribution strategy, this replica's rows of the global batch's draws
    (``draw_rows``).
    """
    order_seed, noise_seed, z_seed = tf.unstack(tf.random.experimental.stateless_split(seed, 3))
    size = tf.cast(size, tf.int32)
    pairs = size // 2

    def shuffle(rows):
        uniform = tf.random.stateless_uniform(tf.stack([rows, size]), seed=order_seed)
        return tf.argsort(uniform, axis=1, stable=True)[:, : 2 * pairs]

    def normal(count, seed):
        return lambda rows: tf.random.stateless_normal(tf.stack([rows, count, style_dim]), seed=seed)

    return {
        "order": tf.cast(draw_rows(shuffle, groups), tf.int32),
        "style_noise": draw_rows(normal(2 * pairs, noise_seed), groups),
        "z": draw_rows(normal(pairs, z_seed), groups),
    }


# ---------------------------------------------------------------- the model


class CcVaeModel(MethodModel):
    """CC-VAE on batches {"set_a": [P, N, H, W, C], "set_b": [P, N, H, W, C], ...}.

    Args:
      posterior: images -> [style mean, style log variance, class code].
      decoder: [style, class code] -> images in [0, 1].
      weights: {"reconstruction", "kl", "reverse_cycle"}: the loss weights.
      reverse_optimizer: the reverse cycle's Adam. Compile's is the forward cycle's.
      seed: of the step's draws; stateless with the step.
    """

    def __init__(
        self,
        posterior: keras.Model,
        decoder: keras.Model,
        weights: dict[str, float],
        reverse_optimizer: keras.optimizers.Optimizer,
        seed: int = 0,
        **kwargs,
    ):
        super().__init__(seed=seed, **kwargs)
        self.posterior = posterior
        self.decoder = decoder
        self.representation = cc_vae_networks.output_network(posterior, "style_mean", name="encoder")
        self.specified = cc_vae_networks.output_network(posterior, "class_code", name="specified")
        self.loss_weights = {name: float(value) for name, value in weights.items()}
        self.reverse_optimizer = loss_scaled(reverse_optimizer)  # compile wraps only its own
        self.style_dim = int(posterior.output_shape[0][-1])
        self.track(LOG_NAMES)

    def networks(self) -> dict[str, keras.Model]:
        return {
            "encoder": self.representation,
            "specified": self.specified,
            "posterior": self.posterior,
            "decoder": self.decoder,
        }

    def forward_variables(self) -> list:
        return self.posterior.trainable_variables + self.decoder.trainable_variables

    def reverse_variables(self) -> list:
        """The encoder's variables except the specified and log-variance heads'.

        The reverse cycle reads neither head. Their gradient there is zero, and so is Adam's
        step.
        """
        heads = {
            id(variable)
            for name in ("class_code", "style_log_variance")
            for variable in self.posterior.get_layer(name).trainable_variables
        }
        return [variable for variable in self.posterior.trainable_variables if id(variable) not in heads]

    def draws_at(self, step, groups, size) -> dict[str, tf.Tensor]:
        """The draws of step ``step``: :func:`draw_step` from the seed and the step."""
        seed = self.step_seed(step)
        return draw_step(seed, groups, size, self.style_dim)

    def updates(self) -> list[Update]:
        return [
            Update(self.forward_terms, self.optimizer, self.forward_variables, loss="forward_loss"),
            Update(self.reverse_terms, self.reverse_optimizer, self.reverse_variables, loss="reverse_loss"),
        ]

    def forward_terms(self, batch, step, training, earlier) -> dict[str, tf.Tensor]:
        """The forward cycle on set A's stacks, and the step's draws for the reverse cycle."""
        del earlier
        sets = to_float_images(batch["set_a"])
        shape = tf.shape(sets)
        draws = self.draws_at(step, shape[0], shape[1])
        out = forward_cycle(self.posterior, self.decoder, sets, draws, training)
        forward_loss = (
            self.loss_weights["reconstruction"] * out["reconstruction"] + self.loss_weights["kl"] * out["kl"]
        )
        return {
            "reconstruction": out["reconstruction"],
            "kl": out["kl"],
            "forward_loss": forward_loss,
            **draws,
        }

    def reverse_terms(self, batch, step, training, earlier) -> dict[str, tf.Tensor]:
        """The reverse cycle across set A and set B, with the forward update's draws (``earlier``)."""
        del step
        draws = {name: earlier[name] for name in DRAWS}
        out = reverse_cycle(
            self.posterior,
            self.decoder,
            to_float_images(batch["set_a"]),
            to_float_images(batch["set_b"]),
            draws,
            training,
        )
        reverse_loss = self.loss_weights["reverse_cycle"] * out["reverse_cycle"]
        return {
            "reverse_cycle": out["reverse_cycle"],
            "reverse_loss": reverse_loss,
            "loss": earlier["forward_loss"] + reverse_loss,
        }

    def compute_terms(self, batch, step, training) -> dict[str, tf.Tensor]:
        """Both cycles' terms at the current weights, with no update between them."""
        terms = self.forward_terms(batch, step, training, {})
        terms.update(self.reverse_terms(batch, step, training, terms))
        return terms


# ---------------------------------------------------------------- the declaration


# --method.networks: (encoder, decoder) in the models registry, and the image size they take.
NETWORKS = {
    "mnist": (("cc_vae_encoder", "cc_vae_decoder"), cc_vae_networks.IMAGE_SIZE),
    "conv64": (("cc_vae_encoder_64", "cc_vae_decoder_64"), vae64_networks.IMAGE_SIZE),
}


def images(config: ExperimentConfig) -> ImageNeed:
    """The size the chosen networks take; the other networks are the advice."""
    chosen = config.method.networks
    size = NETWORKS[chosen][1]
    what = "the authors' MNIST networks" if chosen == "mnist" else "the 64 x 64 networks"
    others = [
        f"--method.networks={name} for {side} x {side}"
        for name, (_, side) in NETWORKS.items()
        if name != chosen
    ]
    return ImageNeed(
        (size, size, None),
        f"--method=cc_vae --method.networks={chosen} ({what})",
        f"Use data of {size} x {size} images, or {', '.join(others)}.",
    )


def build_networks(config: ExperimentConfig, image_shape: tuple[int, int, int]) -> dict[str, keras.Model]:
    """The posterior and the decoder, built in a fixed order: one seed, one set of weights."""
    method = config.method
    encoder, decoder = NETWORKS[method.networks][0]
    dims = dict(style_dim=method.style_dim, class_dim=method.class_dim, base_channels=method.base_channels)
    return {
        "posterior": models.build(encoder, input_shape=tuple(image_shape), **dims),
        "decoder": models.build(decoder, output_shape=tuple(image_shape), **dims),
    }


def build(config: ExperimentConfig, image_shape: tuple[int, int, int]) -> CcVaeModel:
    """The networks and the two Adams at the config's rate.

    The Adams are the authors': betas 0.9 and 0.999, PyTorch's epsilon.
    """
    networks = build_networks(config, image_shape)
    trainer, method = config.trainer, config.method

    def adam():
        # The authors' optim.Adam (training.py L67-77) with PyTorch's default epsilon.
        return optimizers.run_adam(trainer, epsilon=optimizers.PYTORCH_ADAM_EPSILON)

    model = CcVaeModel(
        networks["posterior"],
        networks["decoder"],
        weights={
            "reconstruction": method.reconstruction_weight,
            "kl": method.kl_weight,
            "reverse_cycle": method.reverse_cycle_weight,
        },
        reverse_optimizer=adam(),
        seed=trainer.seed,
    )
    model.compile_for(trainer, adam())
    return model


def variant(config: ExperimentConfig) -> str:
    """The loss weights that differ from the authors' defaults, in words."""
    method, authors = config.method, CcVaeConfig(name="cc_vae")
    changed = []
    if method.reverse_cycle_weight == 0:
        changed.append("forward cycle only")
    elif method.reverse_cycle_weight != authors.reverse_cycle_weight:
        changed.append(f"reverse cycle weight {method.reverse_cycle_weight:g}")
    if method.reconstruction_weight != authors.reconstruction_weight:
        changed.append(f"reconstruction weight {method.reconstruction_weight:g}")
    if method.kl_weight != authors.kl_weight:
        changed.append(f"KL weight {method.kl_weight:g}")
    return ", ".join(changed)


def supervision(config: ExperimentConfig) -> str:
    """What the groups tell the method: which images share the specified factor.

    The data family names that factor in its ``set_shares``.
    """
    shared = data.get_family(config.data.family).set_shares
    return f"group membership: which images share the specified factor ({shared}), from the sets"


METHOD = Method(
    name="cc_vae",
    config=CcVaeConfig,
    presets=PRESETS,
    smallest_run=PRESETS["mnist_cc_vae_quick"].replace(
        name="cc_vae_smoke",
        source="procedural",
        jit_compile=False,
        set_size=8,
        pairs_per_step=2,
        steps=4,
        log_every=2,
    ),
    quick_run=PRESETS["mnist_cc_vae_quick"],
    build=build,
    supervision=supervision,
    images=images,
    variant=variant,
)
