"""Shapes3D: sets/s of index-arithmetic curation against the authors' filter scan, and renderer images/s.

Both curations run in one process on the same backend, the procedural renderer. Both return a set
of 32 uint8 images whose inactive factors share one random value.

- ours: ``SetCurator.curated`` by index arithmetic, then ``render`` of the 32 chosen images.
- filter scan, as in the authors' code: the whole data set as a ``tf.data`` pipeline in file order,
  ``filter`` on the labels for the set's random inactive values, then ``take(32)``. It is rebuilt
  for every set and renders in blocks of 256, which favours the scan. A second, cheaper scan
  filters the labels alone and renders only the 32 matches.

The renderer's images/s are set against what a training step consumes. That side times
``AbcModel.fit`` with the S3 encoder on a fixed in-memory batch of two sets of 32, as in the
shapes3d preset. So the images/s consumed are 64 x steps/s.

Writes docs/figures/benchmarks/curation.json and the section of BENCHMARKS.md.

  python -m benchmarks.curation [--scan_sets 4] [--no_write]
"""

from __future__ import annotations

import os
import time

import keras
import numpy as np
import tensorflow as tf

import models
from abc_tf.runs.experiments import get_preset
from abc_tf.data import factor_grid
from abc_tf.data.shapes3d import family as s3d
from abc_tf.data.shapes3d import scenes as render
from abc_tf.methods.abc.model import AbcModel
from benchmarks import report
from benchmarks.report import argument_parser, measured, publish, save_results

TITLE = "Shapes3D curation and rendering"
FILE = "docs/figures/benchmarks/curation.json"
SET_SIZE = 32
GOAL = 1000  # our sets/s over a filter scan's, in every row
SCAN_SETS = 4  # sets per filter scan by default
CONFIGURATIONS = (
    ("wall_hue", "wall hue (the main job)"),
    ("wall_hue,object_hue,floor_hue", "all three hues"),
    ("wall_hue,object_hue,floor_hue,scale", "three hues + scale (4 inactive)"),
)
SCAN_BLOCK = 256


def ours_sets_per_second(curator: factor_grid.SetCurator, seconds: float = 3.0) -> tuple[float, float]:
    """Our curation's two rates, as a pair.
    The first is sets/s with images, one set per call as the pipeline draws them.
    The second is sets/s of ids alone, 10^4 sets per call."""
    rng = np.random.default_rng(0)
    render.render(s3d.GRID.unravel(curator.curated(rng, 1)))  # warm-up: the first call's set-up is not a rate
    count, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        ids = curator.curated(rng, 1)
        render.render(s3d.GRID.unravel(ids))
        count += 1
    with_images = count / (time.perf_counter() - start)
    calls, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        curator.curated(rng, 10000)
        calls += 1
    return with_images, calls * 10000 / (time.perf_counter() - start)


def _labels(flat: tf.Tensor) -> tf.Tensor:
    """Factor indices [..., 6] of flat indices, in TF: what a tfds record carries."""
    strides = tf.constant(s3d.GRID.strides, tf.int64)
    return (flat[..., None] // strides) % tf.constant(s3d.FACTOR_SIZES, tf.int64)


def _render_block(flat: np.ndarray) -> np.ndarray:
    return render.render(s3d.GRID.unravel(flat))


def scan_set(inactive: tuple[int, ...], values: np.ndarray, render_all: bool) -> np.ndarray:
    """One set by a filter scan over the whole data set in file order, the authors' way."""
    inactive_t = tf.constant(inactive, tf.int64)
    values_t = tf.constant(values, tf.int64)
    dataset = tf.data.Dataset.range(s3d.GRID.num_points)
    if render_all:
        # Every scanned element carries its image, as when the records are read from disk.
        dataset = (
            dataset.batch(SCAN_BLOCK)
            .map(
                lambda flat: (
                    tf.ensure_shape(tf.numpy_function(_render_block, [flat], tf.uint8), [None, 64, 64, 3]),
                    flat,
                )
            )
            .unbatch()
        )
    else:
        dataset = dataset.map(lambda flat: (tf.zeros([], tf.uint8), flat))
    dataset = dataset.filter(
        lambda image, flat: tf.reduce_all(tf.gather(_labels(flat), inactive_t) == values_t)
    ).take(SET_SIZE)
    images, flats = [], []
    for image, flat in dataset:
        images.append(image.numpy())
        flats.append(int(flat))
    if not render_all:
        images = list(_render_block(np.array(flats)))
    return np.stack(images)


def scan_sets_per_second(inactive: tuple[int, ...], num_sets: int, render_all: bool) -> float:
    rng = np.random.default_rng(1)
    sizes = np.asarray(s3d.FACTOR_SIZES)[list(inactive)]
    start = time.perf_counter()
    for _ in range(num_sets):
        images = scan_set(inactive, rng.integers(0, sizes), render_all)
        assert images.shape == (SET_SIZE, 64, 64, 3)
    return num_sets / (time.perf_counter() - start)


def renderer_images_per_second(batch: int = 64, seconds: float = 3.0) -> float:
    rng = np.random.default_rng(2)
    factors = rng.integers(0, s3d.FACTOR_SIZES, size=(16, batch, 6))
    count, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        render.render(factors[count % 16])
        count += 1
    return count * batch / (time.perf_counter() - start)


def pipeline_images_per_second(batches: int = 300) -> float:
    config = get_preset("shapes3d")
    iterator = iter(s3d.make_dataset(config, seed=0))
    next(iterator)
    start = time.perf_counter()
    for _ in range(batches):
        next(iterator)
    return batches * 2 * config.batch.set_size / (time.perf_counter() - start)


def training_images_per_second(steps: int = 30) -> float:
    config = get_preset("shapes3d")
    keras.utils.set_random_seed(0)
    model = AbcModel(models.build("s3", embedding_dim=config.encoder.embedding_dim, input_shape=(64, 64, 3)))
    model.compile(optimizer=keras.optimizers.Adam(config.trainer.learning_rate))
    batch = next(iter(s3d.make_dataset(config, seed=0)))
    dataset = tf.data.Dataset.from_tensors(batch).repeat()
    model.fit(dataset, epochs=1, steps_per_epoch=3, verbose=0)  # trace and warm up
    start = time.perf_counter()
    model.fit(dataset, epochs=1, steps_per_epoch=steps, verbose=0)
    return steps * 2 * config.batch.set_size / (time.perf_counter() - start)


def section(results: dict) -> str:
    """The section of BENCHMARKS.md, from the results file alone."""
    rows, goal = results["rows"], results["goal"]
    lines = [
        f"Sets/s of {results['set_size']} images curated by index; ratio: over a filter scan. Goal: at least "
        f"{goal:,}x.",
        "",
        "| inactive factors | ours: ids + images | ratio | ours: ids only | ratio |",
        "|---|---|---|---|---|",
    ]
    for row in rows:
        lines.append(
            f"| {row['inactive']} | {row['ours_images']:,.0f} | {row['ratio_images']:,.0f}x | "
            f"{row['ours_ids']:,.0f} | {row['ratio_ids']:,.0f}x |"
        )
    smallest = min(min(row["ratio_images"], row["ratio_ids"]) for row in rows)
    holds = "holds in every row" if smallest >= goal else "does not hold in every row"
    over = results["pipeline_over_training"]
    lines += [
        "",
        f"`{results['command']}`, {report.host(results)}",
        "",
        f"The goal {holds}. The pipeline delivers {over:,.{0 if over >= 10 else 1}f}x what S3 training "
        "consumes.",
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argument_parser(__doc__, leaves="BENCHMARKS.md and the results file")
    parser.add_argument(
        "--scan_sets",
        type=int,
        default=SCAN_SETS,
        help="Sets drawn by each filter scan (each takes seconds).",
    )
    args = parser.parse_args()

    load_start = os.getloadavg()[0]
    start = time.perf_counter()
    render.weight_tables()
    table_seconds = time.perf_counter() - start

    results = {
        "set_size": SET_SIZE,
        "scan_block": SCAN_BLOCK,
        "scan_sets": args.scan_sets,
        "goal": GOAL,
        "table_seconds": table_seconds,
        "rows": [],
    }
    for spec, title in CONFIGURATIONS:
        inactive = s3d.GRID.parse_factors(spec)
        curator = factor_grid.SetCurator(s3d.GRID, inactive, SET_SIZE)
        ours_images, ours_ids = ours_sets_per_second(curator)
        scan_images = scan_sets_per_second(inactive, args.scan_sets, render_all=True)
        scan_labels = scan_sets_per_second(inactive, args.scan_sets, render_all=False)
        results["rows"].append(
            {
                "inactive": title,
                "ours_images": ours_images,
                "scan_images": scan_images,
                "ratio_images": ours_images / scan_images,
                "ours_ids": ours_ids,
                "scan_labels": scan_labels,
                "ratio_ids": ours_ids / scan_labels,
            }
        )
        print(results["rows"][-1], flush=True)

    renderer = renderer_images_per_second()
    pipeline = pipeline_images_per_second()
    training = training_images_per_second()
    results.update(
        render_images_per_s=renderer,
        pipeline_images_per_s=pipeline,
        training_images_per_s=training,
        pipeline_over_training=pipeline / training,
        **measured(load_start),
        command="python -m benchmarks.curation"
        + (f" --scan_sets {args.scan_sets}" if args.scan_sets != SCAN_SETS else ""),
    )
    if not args.no_write:
        save_results("curation", results)
    publish(TITLE, section(results), not args.no_write)


if __name__ == "__main__":
    main()
