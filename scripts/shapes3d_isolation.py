"""Shapes3D factor isolation across training conditions and seeds (paper Fig. 3c, S1, S2).

  python -m scripts.shapes3d_isolation --output_dir=runs/shapes3d_isolation --seeds=3

Trains, one process and one run at a time, every condition of Fig. 3c on the procedural
Shapes3D (train.py's library path, ``abc_tf.runs.training.train``), evaluates each run with
``abc_tf.evaluation.tasks.factor_isolation`` on one shared labelled sample, and writes

- ``<output_dir>/<condition>/seed_<k>/`` run directories with ``metrics.json``;
- ``<output_dir>/summary.json`` (mean, std and per-seed values per condition and factor) and
  ``summary.md`` (the tables of RESULTS.md);
- figures under ``--figures_dir``: MINE and probe distributions over seeds for every
  condition, PCA scatter plots and MINE noise sweeps of one wall-hue and one all-hues run.

Runs already evaluated (their metrics.json exists) are skipped, so an interrupted study
resumes. The "no inactive factor" condition (both sets drawn from the whole data set) is not a
Shapes3D data-family setting, so it is trained here with the same model and optimizer on an
unconstrained set-pair stream.
"""

from __future__ import annotations

import json
import os
import time

from absl import app, flags

FLAGS = flags.FLAGS
flags.DEFINE_string("output_dir", "runs/shapes3d_isolation", "Folder of the runs and summaries.")
flags.DEFINE_string("figures_dir", "docs/figures/shapes3d", "Folder of the PNG figures.")
flags.DEFINE_list("conditions", None, "Conditions to run (default: all, in paper order).")
flags.DEFINE_integer("seeds", 3, "Seeds per condition.")
flags.DEFINE_integer("steps", 300, "Training steps per run.")
flags.DEFINE_float("learning_rate", 3e-4, "Adam learning rate of the encoder.")
flags.DEFINE_integer("embedding_dim", 64, "Embedding size d (the supplement's 64).")
flags.DEFINE_boolean(
    "mixed_precision",
    True,
    "Train in bfloat16 where the CPU computes it natively (AMX/AVX512-BF16: several "
    "times faster), float16 on GPUs, float32 elsewhere (abc_tf/runs/precision.py).",
)
flags.DEFINE_integer("num_images", 2048, "Labelled images of the evaluation sample.")
flags.DEFINE_integer("mine_steps", 1000, "MINE steps per network.")
flags.DEFINE_float("mine_learning_rate", 1e-3, "MINE learning rate.")
flags.DEFINE_integer("mine_eval_samples", 65536, "Samples of the final Donsker-Varadhan average.")
flags.DEFINE_integer("probe_epochs", 60, "Epochs of each probe.")
flags.DEFINE_boolean(
    "probe_noisy_test", True, "Probes see the noise at test time too (I(U + noise; G) proxy)."
)
flags.DEFINE_integer("num_sigmas", 12, "Points of the MINE noise sweeps of the Fig. S1c,d runs (0: none).")
flags.DEFINE_integer("sweep_mine_steps", 500, "MINE steps per sigma of the sweeps.")

HUES = "floor_hue,wall_hue,object_hue"
# name -> (label, config overrides); the paper's Fig. 3c rows, unconstrained set B where it shows one.
CONDITIONS: dict[str, tuple[str, dict]] = {
    "untrained": ("untrained network", {"inactive_factors": "none"}),
    "none": ("no inactive factor", {"inactive_factors": "none"}),
    "wall": ("wall hue inactive", {"inactive_factors": "wall_hue"}),
    "wall_b_free": (
        "wall hue inactive, set B unconstrained",
        {"inactive_factors": "wall_hue", "curate_both_sets": False},
    ),
    "wall_object": ("wall & object hue inactive", {"inactive_factors": "wall_hue,object_hue"}),
    "wall_object_b_free": (
        "wall & object hue inactive, set B unconstrained",
        {"inactive_factors": "wall_hue,object_hue", "curate_both_sets": False},
    ),
    "all_hues": ("all three hues inactive", {"inactive_factors": HUES}),
    "hue_augmentation": (
        "hue double augmentation (contrastive)",
        {"augmentation_baseline": True, "method": "contrastive"},
    ),
}
SWEEP_CONDITIONS = ("wall", "all_hues")  # Fig. S1c,d


def base_config():
    from abc_tf.runs.experiments import get_preset

    return get_preset("shapes3d").replace(
        steps=FLAGS.steps,
        log_every=FLAGS.steps,
        learning_rate=FLAGS.learning_rate,
        embedding_dim=FLAGS.embedding_dim,
        mixed_precision=FLAGS.mixed_precision,
    )


def unconstrained_dataset(config, seed: int):
    """Set pairs with no inactive factor: both sets drawn uniformly from the whole grid."""
    import numpy as np
    import tensorflow as tf

    from abc_tf.data import factor_grid
    from abc_tf.data.shapes3d import family as shapes3d

    source = shapes3d.open_source(config.data)
    curator = factor_grid.SetCurator(shapes3d.GRID, (), config.batch.set_size, items=source.items)
    shape = (config.batch.pairs_per_step, config.batch.set_size) + shapes3d.IMAGE_SHAPE

    def build(step):
        rng = np.random.default_rng([seed, int(step)])
        return tuple(source.images(curator.unconstrained(rng, config.batch.pairs_per_step)) for _ in range(2))

    def to_batch(step):
        a, b = tf.numpy_function(build, [step], [tf.uint8, tf.uint8], stateful=False)
        return {"set_a": tf.ensure_shape(a, shape), "set_b": tf.ensure_shape(b, shape)}

    return (
        tf.data.Dataset.counter(dtype=tf.int64).map(to_batch, num_parallel_calls=tf.data.AUTOTUNE).prefetch(2)
    )


def train_run(condition: str, config, run_dir: str):
    """Trains one run into run_dir (config.json, encoder.keras); returns the encoder."""
    from abc_tf.runs import training

    if condition == "untrained":
        return training.untrained_encoder(config)
    if condition != "none":
        return training.train(config, run_dir, verbose=0).encoder
    model = training.build_model(config)
    encoder = model.networks()["encoder"]
    model.fit(
        unconstrained_dataset(config, config.trainer.seed),
        epochs=1,
        steps_per_epoch=config.trainer.steps,
        verbose=0,
    )
    os.makedirs(run_dir, exist_ok=True)
    with open(os.path.join(run_dir, "config.json"), "w") as handle:
        handle.write(config.to_json())
    encoder.save(os.path.join(run_dir, "encoder.keras"))
    return encoder


def settings():
    from abc_tf.evaluation.tasks import factor_isolation
    from abc_tf.evaluation.estimators import mine, probes

    return factor_isolation.IsolationSettings(
        num_images=FLAGS.num_images,
        mine=mine.MineSettings(
            learning_rate=FLAGS.mine_learning_rate,
            steps=FLAGS.mine_steps,
            eval_samples=FLAGS.mine_eval_samples,
        ),
        probe=probes.ProbeSettings(epochs=FLAGS.probe_epochs, noisy_test=FLAGS.probe_noisy_test),
    )


def run_condition(condition: str, seed: int, sample) -> dict:
    import numpy as np

    from abc_tf.evaluation.tasks import factor_isolation
    from abc_tf.evaluation.estimators import mine, noise
    from abc_tf.runs.run_dir import embed

    label, overrides = CONDITIONS[condition]
    config = base_config().replace(name=f"shapes3d_{condition}", seed=seed, **overrides)
    run_dir = os.path.join(FLAGS.output_dir, condition, f"seed_{seed}")
    metrics_path = os.path.join(run_dir, "metrics.json")
    if os.path.exists(metrics_path):
        with open(metrics_path) as handle:
            return json.load(handle)
    start = time.time()
    encoder = train_run(condition, config, run_dir)
    trained = time.time()
    figures = os.path.join(FLAGS.figures_dir, "runs", f"{condition}_seed{seed}") if seed == 0 else None
    metrics = factor_isolation.evaluate_encoder(encoder, config, settings(), figures, sample, title=label)
    metrics["condition"] = label
    if seed == 0 and condition in SWEEP_CONDITIONS and FLAGS.num_sigmas:
        embeddings = embed(encoder, sample[0]).astype(np.float64)
        sigmas = noise.sigma_grid(
            embeddings, config.method.length_scale(), FLAGS.num_sigmas, below=30.0, above=5.0
        )
        sweep_settings = mine.MineSettings(
            learning_rate=FLAGS.mine_learning_rate,
            steps=FLAGS.sweep_mine_steps,
            eval_samples=FLAGS.mine_eval_samples // 2,
        )
        values = mine.mine_sigma_sweep(embeddings, sample[1], sigmas, sweep_settings, seed)
        metrics["sweep"] = {"estimator": "mine", "sigmas": sigmas.tolist(), "values": values.tolist()}
    metrics["train_seconds"] = trained - start
    metrics["eval_seconds"] = time.time() - trained
    os.makedirs(run_dir, exist_ok=True)
    with open(metrics_path, "w") as handle:
        json.dump(metrics, handle, indent=2)
    print(
        f"{condition} seed {seed}: train {metrics['train_seconds']:.0f} s, "
        f"eval {metrics['eval_seconds']:.0f} s, "
        f"MINE {', '.join(f'{k} {v:.2f}' for k, v in metrics['mine'].items())}",
        flush=True,
    )
    return metrics


def summarise(results: dict[str, list[dict]]) -> dict:
    import numpy as np

    from abc_tf.data.shapes3d.family import FACTOR_NAMES
    from abc_tf.evaluation.tasks import factor_isolation
    from abc_tf.evaluation.estimators import plots, sweep_plots

    names = list(FACTOR_NAMES)
    summary = {}
    for condition, runs in results.items():
        entry = factor_isolation.aggregate(runs)
        entry["label"] = CONDITIONS[condition][0]
        entry["inactive"] = runs[0]["inactive"]
        entry["spread"] = float(np.mean([run["spread"] for run in runs]))
        entry["train_seconds"] = float(np.mean([run["train_seconds"] for run in runs]))
        summary[condition] = entry
    os.makedirs(FLAGS.figures_dir, exist_ok=True)
    labels = {summary[c]["label"]: c for c in summary}
    for key, ylabel, figure in (
        ("mine", "I(U+noise; G) [nats]", "conditions_mine.png"),
        ("probe_accuracy", "probe accuracy", "conditions_probes.png"),
    ):
        table = {label: factor_isolation.seed_table(summary[c], key)[1] for label, c in labels.items()}
        chance = (
            [summary[next(iter(summary))]["chance"][n] for n in names] if key == "probe_accuracy" else None
        )
        plots.plot_conditions(
            table,
            names,
            {label: summary[c]["inactive"] for label, c in labels.items()},
            os.path.join(FLAGS.figures_dir, figure),
            ylabel,
            chance=chance,
            kind="box",
            title=f"Shapes3D, d={FLAGS.embedding_dim}, sigma=sqrt(tau)=1, {FLAGS.seeds} seeds",
        )
    panels = []
    for condition in SWEEP_CONDITIONS:
        run = results.get(condition, [{}])[0]
        if "sweep" in run:
            panels.append(
                {
                    "sigmas": run["sweep"]["sigmas"],
                    "values": run["sweep"]["values"],
                    "inactive": run["inactive"],
                    "length_scale": run["length_scale"],
                    "label": CONDITIONS[condition][0] + " (seed 0)",
                }
            )
    if panels:
        sweep_plots.plot_sweep_grid(
            panels, names, os.path.join(FLAGS.figures_dir, "mine_sweeps.png"), columns=len(panels)
        )
    return summary


def markdown(summary: dict) -> str:
    from abc_tf.data.shapes3d.family import FACTOR_NAMES

    names = list(FACTOR_NAMES)
    lines = []
    for key, title, fmt in (
        ("mine", "MINE I(U + noise; G), nats", "{:.2f}"),
        ("probe_accuracy", "probe accuracy", "{:.2f}"),
    ):
        lines += [f"{title}, mean +- std over seeds (inactive factors in *italics*):", ""]
        lines.append("| condition | " + " | ".join(names) + " |")
        lines.append("|---" * (len(names) + 1) + "|")
        for entry in summary.values():
            cells = []
            for name in names:
                value = entry[key][name]
                cell = f"{fmt.format(value['mean'])} +- {fmt.format(value['std'])}"
                cells.append(f"*{cell}*" if name in entry["inactive"] else cell)
            lines.append(f"| {entry['label']} | " + " | ".join(cells) + " |")
        if key == "probe_accuracy":
            first = next(iter(summary.values()))
            lines.append("| chance | " + " | ".join(f"{first['chance'][n]:.2f}" for n in names) + " |")
        lines.append("")
    return "\n".join(lines)


def main(argv) -> None:
    del argv
    from abc_tf.evaluation.tasks import factor_isolation

    conditions = FLAGS.conditions or list(CONDITIONS)
    unknown = [c for c in conditions if c not in CONDITIONS]
    if unknown:
        raise app.UsageError(f"Unknown conditions {unknown}; known: {', '.join(CONDITIONS)}.")
    sample = factor_isolation.labelled_sample(base_config(), FLAGS.num_images, seed=1234)
    results = {}
    for condition in conditions:
        results[condition] = [run_condition(condition, seed, sample) for seed in range(FLAGS.seeds)]
    summary = summarise(results)
    with open(os.path.join(FLAGS.output_dir, "summary.json"), "w") as handle:
        json.dump(summary, handle, indent=2)
    text = markdown(summary)
    with open(os.path.join(FLAGS.output_dir, "summary.md"), "w") as handle:
        handle.write(text)
    print(text)


if __name__ == "__main__":
    app.run(main)
