"""Pose isolation from synthetic to real on the procedural cars (paper section 4.3, Table 1).

  python -m scripts.pose_isolation --run_dir=runs/pose_quick --figures_dir=docs/figures/pose

Trains the ``pose_quick`` preset (``abc_tf.runs.training.train``, as ``train.py
--experiment=pose_quick`` does) unless ``run_dir`` already holds a finished run, then

- evaluates it with ``abc_tf.evaluation.tasks.pose_accuracy.evaluate_pose_run``: nearest-neighbour lookup in
  random dictionaries of synthetic renders of known pose, queries from the held-out "real"
  domain and from held-out synthetic instances, against the untrained encoder (same initial
  weights) and its raw backbone features; writes ``run_dir/pose_metrics.json``;
- writes figures: a training batch (set A, set B with real images, both augmented views),
  lookup examples (real queries, the nearest dictionary render of the trained and the
  untrained encoder), error histograms, and the training curves with the titration schedule.
"""

from __future__ import annotations

import json
import os

from absl import app, flags

FLAGS = flags.FLAGS
flags.DEFINE_string(
    "run_dir", "runs/pose_quick", "Run directory (trained here unless it holds encoder.keras)."
)
flags.DEFINE_string("figures_dir", "docs/figures/pose", "Folder of the PNG figures.")
flags.DEFINE_string("experiment", "pose_quick", "Preset to train when the run does not exist.")
flags.DEFINE_integer("repeats", 50, "Random lookup dictionaries (paper: 50).")
flags.DEFINE_integer("dictionary_size", 1800, "Images per dictionary (paper: 1800).")
flags.DEFINE_integer("queries", 500, "Test images per query domain.")


def _training_curves(run_dir: str) -> dict[str, list[float]]:
    """Training scalars of the run's TensorBoard logs (written against the optimizer step):
    {tag: [(step, value)]}."""
    import tensorflow as tf

    curves: dict[str, list] = {}
    train_dir = os.path.join(run_dir, "logs", "train")
    for name in sorted(os.listdir(train_dir)) if os.path.isdir(train_dir) else []:
        for event in tf.compat.v1.train.summary_iterator(os.path.join(train_dir, name)):
            for value in event.summary.value:
                scalar = (
                    float(tf.make_ndarray(value.tensor)) if value.HasField("tensor") else value.simple_value
                )
                curves.setdefault(value.tag, []).append((int(event.step), scalar))
    return curves


def main(argv):
    del argv
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    from abc_tf.runs.experiments import get_preset
    from abc_tf.runs import training
    from abc_tf.runs.run_dir import embed, load_run, network_file
    from abc_tf.data.pose import family as pose
    from abc_tf.data.pose import labelled_views
    from abc_tf.evaluation.tasks import pose_accuracy as pose_eval
    from abc_tf.lookup import nearest_neighbours

    os.makedirs(FLAGS.figures_dir, exist_ok=True)
    if not os.path.exists(network_file(FLAGS.run_dir, "encoder")):
        training.train(get_preset(FLAGS.experiment), FLAGS.run_dir)
    settings = pose_eval.PoseEvalSettings(
        dictionary_size=FLAGS.dictionary_size,
        repeats=FLAGS.repeats,
        num_queries=FLAGS.queries,
        query_domains=("real", "synthetic"),
    )
    results = pose_eval.evaluate_pose_run(FLAGS.run_dir, settings)
    for domain in settings.query_domains:
        print(f"\n{domain} queries ({results['domains'][domain]['num_queries']}):")
        print(pose_eval.format_table(results, domain))

    run = load_run(FLAGS.run_dir)
    config, encoder = run.config, run.encoder
    untrained = training.untrained_encoder(config)

    # 1. One training batch: set A (one instance) and set B (with real images), both views.
    cfg = config.replace(real_fraction=0.25, titration_interval=0)  # show some real images in set B
    batch = next(iter(pose.make_dataset(cfg, seed=0)))
    rows = [
        ("set A, view 1", batch["set_a"][0]),
        ("set A, view 2", batch["set_a_view2"][0]),
        ("set B, view 1", batch["set_b"][0]),
        ("set B, view 2", batch["set_b_view2"][0]),
    ]
    figure, axes = plt.subplots(4, 12, figsize=(12, 4.4))
    for row, (title, images) in enumerate(rows):
        for column in range(12):
            axes[row, column].imshow(images[column].numpy())
            axes[row, column].axis("off")
        axes[row, 0].set_title(title, fontsize=8, loc="left")
    real_b = batch["real_b"][0].numpy()
    figure.suptitle(
        f"one pair of a {config.name} batch; for display {int(real_b.sum())} of the {len(real_b)} images "
        f"of set B are real (slots {np.flatnonzero(real_b).tolist()})",
        fontsize=9,
    )
    figure.savefig(os.path.join(FLAGS.figures_dir, "batch.png"), dpi=90, bbox_inches="tight")
    plt.close(figure)

    # 2. Lookup examples and error histograms on the real domain.
    pool_images, pool_rotations, _ = labelled_views.labelled_images(
        config, "train", "synthetic", FLAGS.dictionary_size, seed=0
    )
    query_images, query_rotations, _ = labelled_views.labelled_images(
        config, "test", "real", FLAGS.queries, seed=1
    )
    errors = {}
    neighbours = {}
    for name, model in (("trained", encoder), ("untrained", untrained)):
        index, _ = nearest_neighbours(
            embed(model, query_images), embed(model, pool_images), config.method.similarity
        )
        neighbours[name] = index
        errors[name] = pose_eval.geodesic_error(pool_rotations[index], query_rotations)
    shown = 12
    figure, axes = plt.subplots(3, shown, figsize=(12, 3.4))
    for column in range(shown):
        axes[0, column].imshow(query_images[column])
        for row, name in ((1, "trained"), (2, "untrained")):
            axes[row, column].imshow(pool_images[neighbours[name][column]])
            axes[row, column].set_title(f"{errors[name][column]:.0f}°", fontsize=7)
    for axis in axes.flat:
        axis.axis("off")
    axes[0, 0].set_title("real query", fontsize=8, loc="left")
    figure.text(0.01, 0.62, "trained", fontsize=8)
    figure.text(0.01, 0.3, "untrained", fontsize=8)
    figure.savefig(os.path.join(FLAGS.figures_dir, "lookup.png"), dpi=90, bbox_inches="tight")
    plt.close(figure)

    figure, axis = plt.subplots(figsize=(5.5, 3.2))
    bins = np.linspace(0, 180, 19)
    for name, colour in (("untrained", "0.6"), ("trained", "C0")):
        axis.hist(
            errors[name],
            bins=bins,
            histtype="step",
            linewidth=2,
            color=colour,
            label=f"{name}: median {np.median(errors[name]):.0f}°",
        )
    axis.set_xlabel("lookup error on real-domain test images (degrees)")
    axis.set_ylabel("images")
    axis.legend(fontsize=8)
    figure.savefig(os.path.join(FLAGS.figures_dir, "errors.png"), dpi=100, bbox_inches="tight")
    plt.close(figure)

    # 3. Training curves and the titration schedule (TensorBoard scalars of the run).
    curves = _training_curves(FLAGS.run_dir)
    if curves:
        figure, axes = plt.subplots(1, 2, figsize=(9, 3))
        for tag in ("abc_loss",):
            steps, values = zip(*sorted(curves.get(tag, [])))
            axes[0].plot(steps, values, marker="o", label=tag)
        axes[0].axhline(
            2 * np.log(config.batch.set_size), color="0.6", linestyle="--", label="chance, 2 ln N"
        )
        axes[0].set_xlabel("step")
        axes[0].legend(fontsize=8)
        for tag, style in (("cycle_accuracy", "o-"), ("real_fraction", "s--")):
            if tag in curves:
                steps, values = zip(*sorted(curves[tag]))
                axes[1].plot(steps, values, style, label=tag)
        axes[1].set_xlabel("step")
        axes[1].legend(fontsize=8)
        figure.savefig(os.path.join(FLAGS.figures_dir, "training.png"), dpi=100, bbox_inches="tight")
        plt.close(figure)
    with open(os.path.join(FLAGS.figures_dir, "summary.json"), "w") as handle:
        json.dump(
            {
                "medians_real_deg": {k: float(np.median(v)) for k, v in errors.items()},
                "metrics": results["domains"],
            },
            handle,
            indent=2,
        )


if __name__ == "__main__":
    app.run(main)
