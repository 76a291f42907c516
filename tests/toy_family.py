"""A tiny grouped data family for tests of the training machinery (not shipped with the library).

Images 28x28x1: a bright 6x6 square at one of 16 grid positions (the active factor) on a
background whose level is fixed within a set (the inactive factor).
"""

from __future__ import annotations

import dataclasses
import os

import numpy as np
import tensorflow as tf

from abc_tf.config import DataConfig, EncoderConfig, ExperimentConfig, SetBatch, TrainerConfig
from abc_tf.data.family import DataFamily
from abc_tf.methods.abc import AbcConfig
from abc_tf.evaluation.tasks import digit_clusters
from abc_tf.evaluation.estimators import plots
from abc_tf.evaluation.tasks import task_registry
from abc_tf.evaluation.tasks.labelled_samples import LabelledSample
from abc_tf.runs.run_dir import embed

IMAGE_SHAPE = (28, 28, 1)


@dataclasses.dataclass(frozen=True)
class ToyConfig(DataConfig):
    """The toy family's own config: nothing beyond every family's source and path."""


# ``abc_tf.data.DATA_FAMILIES["toy"] = ENTRY`` registers the family (tests/conftest.py's fixture).
ENTRY = "toy_family:FAMILY"
# A run of the toy family that trains in seconds: checkpoints at steps 10, 20, 30, 40. Built from
# its parts, so that importing this module needs no registration. One step a compiled call, so a
# test's callback sees every step (the default, auto, is tested in tests/test_training.py); the
# plain graph, so that runs compare to the last bit (auto's timing: tests/test_compile_choice.py).
CONFIG = ExperimentConfig(
    name="toy",
    trainer=TrainerConfig(
        learning_rate=1e-3, steps=40, log_every=10, seed=3, steps_per_execution=1, jit_compile="false"
    ),
    data=ToyConfig(family="toy"),
    batch=SetBatch(set_size=12, pairs_per_step=2),
    method=AbcConfig(name="abc", temperature=0.1),
    encoder=EncoderConfig(architecture="s4", embedding_dim=8),
)
# The finished run that tests only read, trained once per session (the ``trained_toy_run``
# fixture of tests/conftest.py): CONFIG with the learning rate halved at steps 20 and 40.
TRAINED = CONFIG.replace(lr_halving_steps=20)


def draw_set(rng: np.random.Generator, set_size: int) -> tuple[np.ndarray, np.ndarray]:
    level = rng.uniform(0.0, 0.5)
    positions = rng.integers(0, 16, size=set_size)
    images = np.full((set_size, *IMAGE_SHAPE), level, np.float32)
    for k, position in enumerate(positions):
        row, col = 2 + 6 * (position // 4), 2 + 6 * (position % 4)
        images[k, row : row + 6, col : col + 6] = 1.0
    return images, positions


def batches(
    pairs: int, set_size: int, seed: int, views: bool = False, labels: bool = False
) -> tf.data.Dataset:
    """Endless set-pair batches in the AbcModel format."""

    def generate():
        # A new iterator restarts the stream, as a seeded tf.data pipeline would.
        rng = np.random.default_rng(seed)
        while True:
            set_a = [draw_set(rng, set_size) for _ in range(pairs)]
            batch = {
                "set_a": np.stack([images for images, _ in set_a]),
                "set_b": np.stack([draw_set(rng, set_size)[0] for _ in range(pairs)]),
            }
            if views:
                batch["set_a_view2"] = batch["set_a"] + 0.05
                batch["set_b_view2"] = batch["set_b"] + 0.05
            if labels:
                batch["labels_a"] = np.stack([positions for _, positions in set_a]).astype(np.int32)
            yield batch

    example = next(generate())
    signature = {key: tf.TensorSpec(value.shape, value.dtype) for key, value in example.items()}
    return tf.data.Dataset.from_generator(generate, output_signature=signature)


def make_dataset(config, seed: int, start_step: int = 0) -> tf.data.Dataset:
    return batches(
        config.batch.pairs_per_step, config.batch.set_size, seed, views=config.batch.double_augmentation
    )


def make_images(config, seed: int, start_step: int = 0) -> tf.data.Dataset:
    """The "images" format: single unlabelled images (no class labels: the family declares none)."""
    return make_dataset(config, seed, start_step).map(
        lambda batch: {"images": tf.reshape(batch["set_a"], (-1, *IMAGE_SHAPE))}
    )


def image_shape(config) -> tuple[int, int, int]:
    return IMAGE_SHAPE


BACKGROUND_BINS = 4


def labelled_sample(config, num_images: int, seed: int) -> LabelledSample:
    """Single images with their square's position (16) and background level (4 bins of [0, 0.5),
    fixed within a set: inactive)."""
    rng = np.random.default_rng(seed)
    drawn = [draw_set(rng, 1) for _ in range(num_images)]
    images = np.concatenate([images for images, _ in drawn])
    levels = np.minimum((images[:, 0, 0, 0] / 0.5 * BACKGROUND_BINS).astype(np.int64), BACKGROUND_BINS - 1)
    factors = np.stack([np.concatenate([positions for _, positions in drawn]), levels], axis=1).astype(
        np.int64
    )
    return LabelledSample(images, factors, ("position", "background"), (16, BACKGROUND_BINS), ("background",))


def evaluate_positions(run, out_dir: str, settings) -> dict:
    """The toy family's task: 1-NN accuracy of the square's position, and the PCA figure."""
    sample = labelled_sample(run.config, settings.isolation.num_images, settings.sample_seed)
    embeddings = embed(run.encoder, sample.images)
    plots.plot_embeddings_pca(embeddings, sample.factors, sample.names, os.path.join(out_dir, "pca.png"))
    return {
        "position_1nn": digit_clusters.nearest_neighbour_accuracy(embeddings, sample.factors[:, 0], seed=0),
        "figures": ["pca.png"],
    }


# The family's own evaluation task, named by the family as ``"module:NAME"`` (tests/test_shape.py
# evaluates it through evaluate.py), as a user's family names theirs.
TASK = task_registry.Task(evaluate_positions, labelled_sample)
FAMILY = DataFamily(
    name="toy",
    config=ToyConfig,
    image_shape=image_shape,
    streams={"sets": make_dataset, "images": make_images},
    evaluation_task="toy_family:TASK",
)
