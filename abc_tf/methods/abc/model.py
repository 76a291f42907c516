"""The ABC method (``--method=abc``) and the two-view contrastive baseline
(``--method=contrastive``).

``AbcModel`` trains an encoder with the ABC or the contrastive loss through ``fit``. With
``regression_weight`` > 0 it also trains the spherical-regression pose head on set A's labels
(docs/PAPERS.md section 3, Table 2).

Batch format ("sets", abc_tf/data/family.py): ``set_a`` ``[P, N, H, W, C]`` and ``set_b``
``[P, M, H, W, C]``. Double augmentation adds ``set_a_view2`` and ``set_b_view2``. A head adds ``labels_a``
``[P, N, ...]``. An augmentation-baseline batch has only ``set_a`` and ``set_a_view2``; the
latter serves as set B. Images are uint8 or float in [0, 1]. The encoder embeds the whole batch
in one call.
"""

from __future__ import annotations

from typing import Callable

import keras
import tensorflow as tf

import models
from abc_tf import data, losses, optimizers
from abc_tf.config import SIMILARITIES, EncoderConfig, ExperimentConfig
from abc_tf.methods.abc import PRESETS, AbcConfig, ContrastiveConfig
from abc_tf.methods.base import Method, MethodModel, build_encoder, to_float_images
from models import pose_head

SET_KEYS = ("set_a", "set_b", "set_a_view2", "set_b_view2")
LOSS_TYPES = ("abc", "contrastive")


class AbcModel(MethodModel):
    """Trains ``encoder`` so that sets of embeddings correspond one to one.

    Args:
      encoder: any Keras model mapping images [B, H, W, C] to embeddings [B, D].
      similarity, temperature: of the loss (docs/PAPERS.md section 1).
      loss_type: "abc", or "contrastive": set_a and set_a_view2 are two views of one batch.
      abc_weight: weight of the ABC loss. 0 trains the head alone, a baseline.
      head: optional layer or model on set A's embeddings, trained jointly.
      head_loss: ``f(labels_a, head_outputs) -> scalar``; required with a head.
      head_weight: weight of the head loss.
    """

    def __init__(
        self,
        encoder: keras.Model,
        similarity: str = "l2sq",
        temperature: float = 1.0,
        loss_type: str = "abc",
        abc_weight: float = 1.0,
        head: keras.layers.Layer | None = None,
        head_loss: Callable[[tf.Tensor, tf.Tensor], tf.Tensor] | None = None,
        head_weight: float = 1.0,
        **kwargs,
    ):
        super().__init__(**kwargs)
        if similarity not in SIMILARITIES:
            raise ValueError(f"Unknown similarity {similarity!r}; choose one of {', '.join(SIMILARITIES)}.")
        if loss_type not in LOSS_TYPES:
            raise ValueError(f"Unknown loss_type {loss_type!r}; choose one of {', '.join(LOSS_TYPES)}.")
        if head is not None and head_loss is None:
            raise ValueError("AbcModel got a head but no head_loss to train it with.")
        self.encoder = encoder
        self.similarity = similarity
        self.temperature = float(temperature)
        self.loss_type = loss_type
        self.abc_weight = float(abc_weight)
        self.head = head
        self.head_loss = head_loss
        self.head_weight = float(head_weight)
        self.track(("loss", "abc_loss", "cycle_accuracy") + (("head_loss",) if head is not None else ()))

    def embed_sets(self, batch: dict[str, tf.Tensor], training: bool = False) -> dict[str, tf.Tensor]:
        """Every set of the batch in one encoder call: {key: [P, S, D]}, float32."""
        keys = [key for key in SET_KEYS if key in batch]
        sets = [to_float_images(batch[key]) for key in keys]
        sizes = [tf.shape(images)[1] for images in sets]
        pairs = tf.shape(sets[0])[0]
        flat = tf.concat(
            [tf.reshape(images, tf.concat([[-1], tf.shape(images)[2:]], 0)) for images in sets], axis=0
        )
        # The loss runs in float32 even when the encoder computes in mixed precision.
        embeddings = tf.cast(self.encoder(flat, training=training), tf.float32)
        pieces = tf.split(embeddings, [pairs * size for size in sizes], axis=0)
        return {key: tf.reshape(piece, [pairs, size, -1]) for key, piece, size in zip(keys, pieces, sizes)}

    def compute_terms(
        self, batch: dict[str, tf.Tensor], step: tf.Tensor, training: bool
    ) -> dict[str, tf.Tensor]:
        """The ABC or contrastive loss of one batch, its cycle accuracy and the head's loss."""
        del step  # the loss has no schedule
        embedded = self.embed_sets(batch, training=training)
        if self.loss_type == "contrastive":
            abc, accuracy = losses.contrastive_loss(
                embedded["set_a"], embedded["set_a_view2"], self.similarity, self.temperature
            )
        elif "set_b" not in embedded:
            # Augmentation baseline: set B is set A's second view, the correspondence the augmentation.
            abc, accuracy = losses.abc_loss(
                embedded["set_a"], embedded["set_a_view2"], self.similarity, self.temperature
            )
        else:
            abc, accuracy = losses.abc_loss(
                embedded["set_a"],
                embedded["set_b"],
                self.similarity,
                self.temperature,
                embedded.get("set_a_view2"),
                embedded.get("set_b_view2"),
            )
        terms = {"abc_loss": abc, "cycle_accuracy": accuracy, "loss": self.abc_weight * abc}
        if self.head is not None:
            set_a = embedded["set_a"]
            flat_a = tf.reshape(set_a, [-1, tf.shape(set_a)[-1]])
            labels = batch["labels_a"]
            flat_labels = tf.reshape(labels, tf.concat([[-1], tf.shape(labels)[2:]], 0))
            head_loss = tf.cast(self.head_loss(flat_labels, self.head(flat_a, training=training)), tf.float32)
            terms["head_loss"] = head_loss
            terms["loss"] = terms["loss"] + self.head_weight * head_loss
        # Regularisation losses of the encoder or head (none in the paper's tables).
        if self.losses:
            terms["loss"] = terms["loss"] + tf.add_n([tf.cast(loss, tf.float32) for loss in self.losses])
        return terms

    def networks(self) -> dict[str, keras.Model]:
        return {"encoder": self.encoder, **({"head": self.head} if self.head is not None else {})}


def stacked_sets(batch: dict[str, tf.Tensor]) -> tuple[tf.Tensor, tf.Tensor]:
    """A set batch as ``(images, y)`` for a plain Keras model compiled with ``losses.ABCLoss``.

    images: float32 [2 * P * N, H, W, C] in [0, 1], sets A then sets B. y: zeros, which the loss
    ignores; Keras needs one.
    """
    images = to_float_images(tf.concat([batch["set_a"], batch["set_b"]], 0))
    images = tf.reshape(images, tf.concat([[-1], tf.shape(images)[2:]], 0))
    return images, tf.zeros(tf.shape(images)[:1])


def _build(config: ExperimentConfig, image_shape: tuple[int, int, int], loss_type: str) -> AbcModel:
    """AbcModel around the config's encoder and any pose head, compiled with Adam and the config's
    schedule.

    The head is built right after the encoder, so the seed fixes its initial weights too.
    """
    encoder = build_encoder(config, image_shape)
    head, head_loss = None, None
    # The contrastive loss's config (ContrastiveConfig) has no regression head and no ABC weight.
    regression_weight = getattr(config.method, "regression_weight", 0.0)
    if regression_weight > 0:
        head = models.build("spherical_regression", embedding_dim=config.encoder.embedding_dim)
        head_loss = pose_head.spherical_regression_loss
    model = AbcModel(
        encoder,
        similarity=config.method.similarity,
        temperature=config.method.temperature,
        loss_type=loss_type,
        abc_weight=getattr(config.method, "abc_weight", 1.0),
        head=head,
        head_loss=head_loss,
        head_weight=regression_weight,
    )
    model.compile_for(config.trainer, optimizers.run_adam(config.trainer))
    return model


def _check_abc(config: ExperimentConfig) -> None:
    if config.method.regression_weight > 0 and data.get_family(config.data.family).pose_views is None:
        raise ValueError(
            f"--method.regression_weight={config.method.regression_weight}: the spherical-regression head "
            f"trains on set A's pose labels, and data family {config.data.family!r} has none (--data=pose "
            "streams them)."
        )


def _check_contrastive(config: ExperimentConfig) -> None:
    if not (config.batch.double_augmentation or config.batch.augmentation_baseline):
        raise ValueError(
            "--method=contrastive trains on two views of every image: set --batch.double_augmentation (with "
            "--data.augmentations), or --batch.augmentation_baseline on shapes3d or mnist."
        )


def _abc_supervision(config: ExperimentConfig) -> str:
    if config.batch.augmentation_baseline:
        return (
            "none beyond the augmentations: each set and its second set are two augmented views of the same "
            "images"
        )
    return (
        "set membership: which images share the inactive factors (the factors themselves unknown to the loss)"
    )


def _smallest(preset: str, name: str) -> ExperimentConfig:
    """``preset`` cut to 4 steps of 2 pairs of sets of 8 on an 8-dimensional S3 encoder."""
    return PRESETS[preset].replace(
        name=name,
        encoder=EncoderConfig(architecture="s3", embedding_dim=8),
        set_size=8,
        pairs_per_step=2,
        eval_every=0,
        steps=4,
        log_every=2,
    )


METHOD = Method(
    name="abc",
    config=AbcConfig,
    presets=PRESETS,
    smallest_run=_smallest("shapes3d_demo", "abc_smoke"),
    quick_run=PRESETS["shapes3d_demo"],
    build=lambda config, image_shape: _build(config, image_shape, "abc"),
    supervision=_abc_supervision,
    check_config=_check_abc,
    variant=lambda config: "augmentation baseline" if config.batch.augmentation_baseline else "",
    accepts_two_view_sets=True,  # the second view stands in for set B (compute_terms)
)
CONTRASTIVE = Method(
    name="contrastive",
    config=ContrastiveConfig,
    smallest_run=_smallest("shapes3d_hue_baseline", "contrastive_smoke"),
    quick_run=PRESETS["shapes3d_hue_baseline"],
    build=lambda config, image_shape: _build(config, image_shape, "contrastive"),
    supervision="none beyond the augmentations: two augmented views of each image are one identity",
    check_config=_check_contrastive,
    accepts_two_view_sets=True,
)
