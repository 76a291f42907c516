"""LORD (``--method=lord``) on "sets" batches of a family with a fixed training bank.

LORD is Gabbay and Hoshen, "Demystifying Inter-Class Disentanglement", ICLR 2020 (docs/PAPERS.md section P5).
The bank is ``DataFamily.training_bank``. Sources and what is ours: ``abc_tf/methods/lord/__init__.py``.

Only ``set_a`` is read. Each stack [P, N, H, W, C] shows one group, LORD's class: on pose, one car instance.
Pose varies within it: the content. ``index_a`` [P, N] is each image's bank row, ``group_a`` [P] its group.
Stage 1 optimises a code table per group and per image; stage 2 trains two encoders to give those codes.
The comment in ``losses.py`` gives both losses and the reconstruction error r, the one under the
imports here how the stages switch.

Logs: ``loss`` and ``reconstruction`` of the active stage, ``content_penalty`` (stage 1, weighted),
``content_error`` and ``class_error`` (stage 2, unweighted), and ``stage``. A run keeps ``encoder``
(images -> the content code that carries pose, which Table S1 compares), ``class_encoder`` and
``generator`` ([content, class] -> images), from ``abc_tf/methods/lord/networks.py``.
"""

from __future__ import annotations

import os

import keras
import tensorflow as tf

from abc_tf import data, optimizers
from abc_tf.config import ExperimentConfig
from abc_tf.methods.base import (
    Method,
    MethodModel,
    Update,
    draw_rows,
    loss_scaled,
    replica_rows,
    to_float_images,
)
from abc_tf.methods.lord import LordConfig, PRESETS, networks as lord_networks
from abc_tf.methods.lord.losses import (
    amortized_terms,
    cosine_rate,
    latent_terms,
    perceptual_error,
    pixel_error,
)

# The switch by step, under tf.function and XLA. Each stage's terms are a tf.cond on the step, so
# only the taken branch is computed. Weighting both by 0 or 1 would add the encoders' passes to
# every stage-1 step. The idle stage's optimiser gets a zero gradient and a zero learning rate,
# assigned before it steps: a zero gradient alone would still move variables by Adam's momentum.
# Both optimisers step every step, so compile's (stage 1's) counts the run's steps. Before each
# step, the encoders' Adam has its iterations set to the steps since the switch. So its bias
# correction starts afresh at the switch, as the authors' new optimiser. The idle branch returns
# zeros tied to its variables (0 x their sum): its gradient is zeros, not None, also eagerly.
# The codes are gathered before the tf.cond, so XLA compiles the step once. Gathered inside it,
# the tables' gradient shape would come out of the cond's. On the CPU, XLA runs convolutions
# inside a tf.cond much more slowly than outside (BENCHMARKS.md, the baselines' compiled steps).
# So the CPU presets use the plain graph. Every variable (tables, networks, both optimisers) is
# in the one model the trainer checkpoints: a run killed in either stage resumes in it.
LOG_NAMES = ("loss", "reconstruction", "content_penalty", "content_error", "class_error")
LATENT_TERMS = ("latent_loss", "latent_reconstruction", "content_penalty")
AMORTIZED_TERMS = ("amortized_loss", "amortized_reconstruction", "content_error", "class_error")
BETAS = (0.5, 0.999)  # network.py L115, L151
EMBEDDING_INIT = 0.05  # keras.layers.Embedding's default, RandomUniform(-0.05, 0.05) (network.py L197, L211)


# ---------------------------------------------------------------- the model


def _idle(names: tuple[str, ...], variables: list) -> dict[str, tf.Tensor]:
    """Zeros for ``names``, tied to ``variables`` (gradient zeros, not None)."""
    tie = 0.0 * tf.add_n([tf.reduce_sum(tf.cast(variable, tf.float32)) for variable in variables])
    return {name: tie for name in names}


class LordModel(MethodModel):
    """LORD on batches {"set_a": [P, N, H, W, C], "index_a": [P, N], "group_a": [P], ...}.

    Args:
      generator: [content code, class code] -> images in [0, 1].
      content_encoder, class_encoder: images -> codes (stage 2).
      num_images, num_groups: the rows of the code tables, from the family's training bank.
      settings: the method's LordConfig.
      encoder_optimizer: stage 2's Adam; compile's is stage 1's.
      vgg: the perceptual loss's feature network, or None for the pixel loss.
      max_rate: stage 1's initial rate, ``--trainer.learning_rate``.
      seed: the content noise's seed; with the step it makes the noise stateless.
    """

    def __init__(
        self,
        generator: keras.Model,
        content_encoder: keras.Model,
        class_encoder: keras.Model,
        num_images: int,
        num_groups: int,
        settings,
        encoder_optimizer: keras.optimizers.Optimizer,
        vgg: keras.Model | None = None,
        max_rate: float = 3e-4,
        seed: int = 0,
        **kwargs,
    ):
        super().__init__(seed=seed, **kwargs)
        self.generator, self.content_encoder, self.class_encoder, self.vgg = (
            generator,
            content_encoder,
            class_encoder,
            vgg,
        )
        self.content_dim, self.class_dim = int(settings.content_dim), int(settings.class_dim)
        self.stage1_steps = int(settings.stage1_steps)
        self.content_std, self.content_decay = float(settings.content_std), float(settings.content_decay)
        self.code_weight, self.multiplier = float(settings.code_weight), float(settings.latent_lr_multiplier)
        self.rates = (
            float(max_rate),
            float(settings.min_learning_rate),
            float(settings.encoder_learning_rate),
        )
        init = keras.initializers.RandomUniform(
            -EMBEDDING_INIT / self.multiplier, EMBEDDING_INIT / self.multiplier
        )
        self.content_table = self.add_weight(
            shape=(int(num_images), self.content_dim), initializer=init, name="content_table"
        )
        self.class_table = self.add_weight(
            shape=(int(num_groups), self.class_dim), initializer=init, name="class_table"
        )
        self.encoder_optimizer = loss_scaled(encoder_optimizer)  # compile wraps only its own
        self.track(LOG_NAMES, values_at_step=("stage",))

    def networks(self) -> dict[str, keras.Model]:
        return {
            "encoder": self.content_encoder,
            "class_encoder": self.class_encoder,
            "generator": self.generator,
        }

    def content_codes(self, index: tf.Tensor) -> tf.Tensor:
        """The optimised content codes of bank rows ``index`` (any shape) -> [..., d_c]."""
        return self.multiplier * tf.gather(self.content_table, index)

    def class_codes(self, group: tf.Tensor) -> tf.Tensor:
        """The optimised class codes of groups ``group`` -> [..., d_y]."""
        return self.multiplier * tf.gather(self.class_table, group)

    def image_codes(self, batch: dict[str, tf.Tensor]) -> tuple[tf.Tensor, tf.Tensor]:
        """The optimised codes of set A's images: content [P, N, d_c], class [P, N, d_y].

        Each image gets its set's group. The indices broadcast, not the codes:
        tf.repeat's gradient does not compile inside a tf.cond under XLA.
        """
        groups = tf.broadcast_to(batch["group_a"][:, None], tf.shape(batch["index_a"]))
        return self.content_codes(batch["index_a"]), self.class_codes(groups)

    def error(self, images: tf.Tensor, generated: tf.Tensor) -> tf.Tensor:
        return (
            pixel_error(images, generated)
            if self.vgg is None
            else perceptual_error(self.vgg, images, generated)
        )

    def noise_at(self, step, groups, size) -> tf.Tensor:
        """The content noise of ``step``: [groups, size, d_c] standard normal from (seed, step).

        Under a distribution strategy, these are this replica's rows of the global batch's draws.
        """
        seed = self.step_seed(step)
        dim = self.content_dim
        return draw_rows(
            lambda rows: tf.random.stateless_normal(tf.stack([rows, size, dim]), seed=seed), groups
        )

    def latent_variables(self) -> list:
        return [self.content_table, self.class_table] + self.generator.trainable_variables

    def amortized_variables(self) -> list:
        return (
            self.content_encoder.trainable_variables
            + self.class_encoder.trainable_variables
            + self.generator.trainable_variables
        )

    def updates(self) -> list[Update]:
        return [
            Update(self.latent_update, self.optimizer, self.latent_variables, loss="latent_loss"),
            Update(
                self.amortized_update, self.encoder_optimizer, self.amortized_variables, loss="amortized_loss"
            ),
        ]

    def latent_update(self, batch, step, training, earlier) -> dict[str, tf.Tensor]:
        """Stage 1's terms, zeros in stage 2, with its rate set for the step.

        Also returns the step, read before the update counts it, for stage 2's terms.
        """
        del earlier
        step = tf.identity(tf.cast(step, tf.int64))
        active = step < self.stage1_steps
        rate = cosine_rate(step, self.stage1_steps, self.rates[0], self.rates[1])
        self.optimizer.learning_rate.assign(tf.where(active, rate, 0.0))

        # Gathered outside the tf.cond: gathered inside, the dense shape of the tables' gradient is
        # an output of the cond's gradient, which XLA must know when it compiles (Adam's update
        # of the tables); XLA then takes every input of the step as a compile-time constant and
        # compiles the step anew at every step (tests/test_lord.py).
        content, class_codes = self.image_codes(batch)

        def stage1():
            shape = tf.shape(content)
            total = replica_rows(shape[0])[1] * shape[1]
            return latent_terms(
                self.generator,
                self.error,
                to_float_images(batch["set_a"]),
                content,
                class_codes,
                self.noise_at(step, shape[0], shape[1]),
                self.content_std,
                self.content_decay,
                total,
            )

        terms = tf.cond(active, stage1, lambda: _idle(LATENT_TERMS, self.latent_variables()))
        return {**terms, "step": step}

    def amortized_update(self, batch, step, training, earlier) -> dict[str, tf.Tensor]:
        """Stage 2's terms, zeros in stage 1, at the step stage 1 read.

        Its rate and Adam step count are set for that step. "loss" and "reconstruction" are the
        active stage's.
        """
        step = earlier["step"] if "step" in earlier else tf.cast(step, tf.int64)
        active = step >= self.stage1_steps
        self.encoder_optimizer.learning_rate.assign(tf.where(active, self.rates[2], 0.0))
        self.encoder_optimizer.iterations.assign(tf.cast(tf.maximum(step - self.stage1_steps, 0), tf.int64))

        def stage2():
            content, class_codes = self.image_codes(batch)
            return amortized_terms(
                self.generator,
                self.content_encoder,
                self.class_encoder,
                self.error,
                to_float_images(batch["set_a"]),
                content,
                class_codes,
                self.code_weight,
                training,
            )

        terms = tf.cond(active, stage2, lambda: _idle(AMORTIZED_TERMS, self.amortized_variables()))
        latent = {name: earlier.get(name, 0.0) for name in LATENT_TERMS}
        terms["loss"] = latent["latent_loss"] + terms["amortized_loss"]
        terms["reconstruction"] = latent["latent_reconstruction"] + terms["amortized_reconstruction"]
        terms["stage"] = tf.where(active, 2.0, 1.0)
        return terms

    def compute_terms(self, batch, step, training) -> dict[str, tf.Tensor]:
        """Both stages' terms at the current weights (one of them zeros)."""
        terms = self.latent_update(batch, step, training, {})
        terms.update(self.amortized_update(batch, step, training, terms))
        return terms


# ---------------------------------------------------------------- the declaration


def check_config(config: ExperimentConfig) -> None:
    """Checks the stage switch, schedules, perceptual weights and image shape before data is read.

    A ValueError names the flag.
    """
    method, trainer = config.method, config.trainer
    if method.stage1_steps >= trainer.steps:
        raise ValueError(
            f"--method.stage1_steps={method.stage1_steps} must be below --trainer.steps={trainer.steps}: the "
            "steps after it train the encoders, which give the representation."
        )
    if trainer.lr_halving_steps or trainer.lr_drop_step:
        raise ValueError(
            "--trainer.lr_halving_steps and --trainer.lr_drop_step must be 0 for --method=lord: its stages "
            "have their own schedules "
            "(stage 1 a cosine to --method.min_learning_rate, stage 2 --method.encoder_learning_rate)."
        )
    if method.min_learning_rate > trainer.learning_rate:
        raise ValueError(
            f"--method.min_learning_rate={method.min_learning_rate} exceeds --trainer.learning_rate="
            f"{trainer.learning_rate}, stage 1's initial rate."
        )
    if method.reconstruction == "perceptual" and not method.vgg_weights:
        raise ValueError(
            "--method.reconstruction=perceptual needs --method.vgg_weights: a local Keras VGG16 no-top "
            "weights file (ImageNet weights are not downloaded here). Or use --method.reconstruction=pixel."
        )
    if method.vgg_weights and not os.path.isfile(method.vgg_weights):
        raise ValueError(f"--method.vgg_weights={method.vgg_weights} is not a file.")
    if method.vgg_weights and method.reconstruction != "perceptual":
        raise ValueError("--method.vgg_weights is read only by --method.reconstruction=perceptual.")
    shape = tuple(data.get_family(config.data.family).image_shape(config))
    try:
        lord_networks.check_image_shape(shape, method.n_adain_layers)
    except ValueError as error:
        raise ValueError(
            f"--method.n_adain_layers={method.n_adain_layers} with data {config.data.family!r}: {error}"
        ) from None


def build_model(
    config: ExperimentConfig, image_shape: tuple[int, int, int], num_images: int, num_groups: int
) -> LordModel:
    """The compiled model for a bank of ``num_images`` images in ``num_groups`` groups."""
    networks = lord_networks.build_networks(config, image_shape)
    trainer = config.trainer
    model = LordModel(
        networks["generator"],
        networks["encoder"],
        networks["class_encoder"],
        num_images,
        num_groups,
        config.method,
        encoder_optimizer=optimizers.adam(config.method.encoder_learning_rate, betas=BETAS),
        vgg=networks.get("vgg"),
        max_rate=trainer.learning_rate,
        seed=trainer.seed,
    )
    model.compile_for(trainer, optimizers.adam(trainer.learning_rate, betas=BETAS))
    return model


def build(config: ExperimentConfig, image_shape: tuple[int, int, int]) -> LordModel:
    """The model sized by the family's training bank (``DataFamily.training_bank``)."""
    bank = data.get_family(config.data.family).training_bank
    if bank is None:
        raise ValueError(
            f"--method=lord needs a data family with a training bank; {config.data.family!r} has none."
        )
    num_images, num_groups = bank(config)
    return build_model(config, image_shape, num_images, num_groups)


def variant(config: ExperimentConfig) -> str:
    """What differs from the authors' LORD, in words."""
    method = config.method
    changed = ["pixel loss"] if method.reconstruction == "pixel" else []
    if method.content_std == 0:
        changed.append("no content noise")
    if method.content_decay == 0:
        changed.append("no activation penalty")
    return ", ".join(changed)


METHOD = Method(
    name="lord",
    config=LordConfig,
    presets=PRESETS,
    # The procedural pose bank at 16 x 16 (its smallest), stage 2 from step 2.
    smallest_run=PRESETS["pose_lord_quick"].replace(
        name="lord_smoke",
        image_size=16,
        set_size=4,
        pairs_per_step=2,
        stage1_steps=2,
        n_adain_layers=2,
        adain_dim=8,
        base_channels=4,
        content_dim=4,
        class_dim=4,
        steps=4,
        log_every=2,
    ),
    quick_run=PRESETS["pose_lord_quick"],
    build=build,
    supervision=(
        "group membership: which images show one object (the class, from the sets), and the identity of each "
        "training image (a code per bank image)"
    ),
    check_config=check_config,
    variant=variant,
    needs_training_bank=True,
)
