"""A complete small data family: 28x28x1 uint8 images of a bright 6x6 square at one of 16 grid
positions (the active factor) on a background whose level is fixed within a set (the inactive
factor). It streams "sets" and "images" batches and evaluates a run with its own task.
"""

from __future__ import annotations

import os

import numpy as np
import tensorflow as tf

from abc_tf.data.family import DataFamily
from abc_tf.evaluation.estimators import plots
from abc_tf.evaluation.tasks import digit_clusters, task_registry
from abc_tf.evaluation.tasks.labelled_samples import LabelledSample
from abc_tf.examples.squares import SquaresConfig
from abc_tf.runs.run_dir import embed

IMAGE_SHAPE = (28, 28, 1)
BACKGROUND_BINS = 4  # the background level's classes in the labelled sample


def render(positions: np.ndarray, levels: np.ndarray, brightness: np.ndarray) -> np.ndarray:
    """uint8 images [n, 28, 28, 1]: a square of ``brightness`` at ``positions`` on ``levels``."""
    images = np.repeat(np.asarray(levels, np.uint8).reshape(-1, 1, 1, 1), 28 * 28, 1).reshape(
        -1, *IMAGE_SHAPE
    )
    for k, position in enumerate(positions):
        row, col = 2 + 6 * (position // 4), 2 + 6 * (position % 4)
        images[k, row : row + 6, col : col + 6] = brightness[k]
    return images


def draw_set(rng: np.random.Generator, set_size: int) -> tuple[np.ndarray, np.ndarray]:
    """(uint8 images [set_size, 28, 28, 1], their positions): one set, one background level."""
    level = rng.integers(0, 128)
    positions = rng.integers(0, 16, size=set_size)
    # The square's brightness is a nuisance that keeps the images distinct.
    return render(positions, np.full(set_size, level), rng.integers(200, 256, size=set_size)), positions


def batches(
    pairs: int, set_size: int, seed: int, views: bool = False, labels: bool = False
) -> tf.data.Dataset:
    """Endless "sets" batches: set_a and set_b uint8 [pairs, set_size, 28, 28, 1]."""

    def generate():
        rng = np.random.default_rng(seed)  # a new iterator restarts the stream, as a seeded pipeline would
        while True:
            set_a = [draw_set(rng, set_size) for _ in range(pairs)]
            batch = {
                "set_a": np.stack([images for images, _ in set_a]),
                "set_b": np.stack([draw_set(rng, set_size)[0] for _ in range(pairs)]),
            }
            if views:  # --batch.double_augmentation's second views: here a brighter copy
                batch["set_a_view2"] = np.minimum(batch["set_a"], 242) + 13
                batch["set_b_view2"] = np.minimum(batch["set_b"], 242) + 13
            if labels:
                batch["labels_a"] = np.stack([positions for _, positions in set_a]).astype(np.int32)
            yield batch

    signature = {key: tf.TensorSpec(value.shape, value.dtype) for key, value in next(generate()).items()}
    return tf.data.Dataset.from_generator(generate, output_signature=signature)


def make_sets(config, seed: int, start_step: int = 0) -> tf.data.Dataset:
    return batches(config.batch.pairs_per_step, config.batch.set_size, seed, config.batch.double_augmentation)


def make_images(config, seed: int, start_step: int = 0) -> tf.data.Dataset:
    """The "images" format: ``batch_size`` single unlabelled images."""
    return batches(1, config.batch.batch_size, seed).map(lambda batch: {"images": batch["set_a"][0]})


def labelled_sample(config, num_images: int, seed: int) -> LabelledSample:
    """Distinct single images with their square's position (16) and background level (4 bins,
    fixed within a set: inactive), drawn without repeats from the 16 x 128 x 56 images."""
    ids = np.random.default_rng(seed).permutation(16 * 128 * 56)[:num_images]
    positions, levels = ids % 16, ids // 16 % 128
    factors = np.stack([positions, levels * BACKGROUND_BINS // 128], axis=1).astype(np.int64)
    images = render(positions, levels, 200 + ids // 2048)
    return LabelledSample(images, factors, ("position", "background"), (16, BACKGROUND_BINS), ("background",))


def evaluate_positions(run, out_dir: str, settings) -> dict:
    """The family's task: 1-NN accuracy of the square's position, and the PCA figure."""
    sample = labelled_sample(run.config, settings.isolation.num_images, settings.sample_seed)
    embeddings = embed(run.encoder, sample.images)
    plots.plot_embeddings_pca(embeddings, sample.factors, sample.names, os.path.join(out_dir, "pca.png"))
    return {
        "position_1nn": digit_clusters.nearest_neighbour_accuracy(embeddings, sample.factors[:, 0], seed=0),
        "figures": ["pca.png"],
    }


# A family's own evaluation task, named as "module:NAME"; a family with standard labels names a
# key of abc_tf.evaluation.tasks.TASKS instead.
TASK = task_registry.Task(evaluate_positions, labelled_sample)
FAMILY = DataFamily(
    name="squares",
    config=SquaresConfig,
    image_shape=lambda config: IMAGE_SHAPE,
    streams={"sets": make_sets, "images": make_images},
    evaluation_task="abc_tf.examples.squares.family:TASK",
)
