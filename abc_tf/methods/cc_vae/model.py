"""CC-VAE (``--method=cc_vae``), trained on "sets" batches.

CC-VAE is Jha et al., "Disentangling Factors of Variation with Cycle-Consistent Variational
Auto-Encoders", ECCV 2018 (docs/PAPERS.md section P5). The sources and what is ours are in
``abc_tf/methods/cc_vae/__init__.py``. Each stack of ``set_a`` [P, N, H, W, C] shares the
*specified* factor, such as the digit on MNIST. The *unspecified* code z is the rest, the style.
The encoder gives a Gaussian posterior q(z | x) = N(mu(x), diag exp(lv(x))) and a deterministic
specified code s(x). The decoder g(z, s) gives images in [0, 1]. A step is the authors'
iteration: a forward and a reverse cycle, two Adam updates in order (the comment in ``losses.py``).

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
    loss_scaled,
    to_float_images,
)
from abc_tf.methods.cc_vae import CcVaeConfig, PRESETS
from abc_tf.methods.cc_vae.losses import draw_step, forward_cycle, reverse_cycle
from models import vae64_networks
from models import cc_vae_networks

LOG_NAMES = ("loss", "reconstruction", "kl", "reverse_cycle")
DRAWS = ("order", "style_noise", "z")


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
# networks="mnist" is the authors' MNIST convolutional networks (models/cc_vae_networks.py,
# 28 x 28). "conv64" is the 64 x 64 networks (models/vae64_networks.py). There the ABC authors
# followed CC-VAE's supplement (L217).
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
