"""ABC on a grouped image folder, end to end: make the folder, train, measure what the embedding keeps.

  python -m scripts.folders_demo --output_dir=runs/folders_demo [--steps=300 --image_size=32 ...]

1. Renders a grouped folder with the procedural Shapes3D renderer
   (``abc_tf.data.shapes3d.scenes``): one group = one object instance (shape, object hue,
   scale); inside a group the orientation, wall hue and floor hue vary at random. PNG files
   ``<folder>/<group>/img_XXX.png`` plus ``labels.csv`` with all six factors.
2. Trains the ``folders`` preset (S6 encoder, negative l2, lr 3e-4, double augmentation with
   contrast, saturation and crop) on it, shortened for a CPU.
3. Measures, per factor, probe accuracy and MINE mutual information of the trained and of the
   untrained encoder (``abc_tf.evaluation.tasks.label_information``) at two noise scales: sigma = the length
   scale (what the loss sees), and sigma = ``--relative_sigma`` times each embedding's own
   spread (the untrained embeddings are ~1000x smaller than the length scale, so only this
   second measurement says what the untrained features hold).

Set membership says only "same object instance"; the factors shared across sets are
orientation, wall hue and floor hue, so ABC should keep those and drop shape, object hue and
scale (the inactive factors). Writes ``results.json`` and ``results.md`` into the output directory.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import shutil
import time

import numpy as np

FACTORS = ("floor_hue", "wall_hue", "object_hue", "scale", "shape", "orientation")


def make_grouped_folder(
    root: str,
    shapes: int = 4,
    object_hues: tuple[int, ...] = (0, 2, 4, 6, 8),
    scales: tuple[int, ...] = (0, 7),
    per_group: int = 40,
    seed: int = 0,
) -> int:
    """Writes one folder per (shape, object hue, scale) with ``per_group`` random scenes each.

    Returns the number of images. Existing folders are overwritten file by file (same names).
    """
    import tensorflow as tf

    from abc_tf.data.shapes3d import scenes as shapes3d_scenes

    rng = np.random.default_rng(seed)
    rows = []
    for shape in range(shapes):
        for hue in object_hues:
            for scale in scales:
                group = f"{shapes3d_scenes.SHAPES[shape]}_hue{hue}_scale{scale}"
                os.makedirs(os.path.join(root, group), exist_ok=True)
                factors = np.zeros((per_group, 6), np.int64)
                factors[:, 0] = rng.integers(0, shapes3d_scenes.NUM_HUES, per_group)  # floor hue
                factors[:, 1] = rng.integers(0, shapes3d_scenes.NUM_HUES, per_group)  # wall hue
                factors[:, 2] = hue
                factors[:, 3] = scale
                factors[:, 4] = shape
                factors[:, 5] = rng.integers(0, len(shapes3d_scenes.ORIENTATIONS_DEG), per_group)
                images = shapes3d_scenes.render(factors)
                for index, (image, row) in enumerate(zip(images, factors)):
                    name = f"{group}/img_{index:03d}.png"
                    tf.io.write_file(os.path.join(root, name), tf.io.encode_png(image))
                    rows.append([name, *row.tolist()])
    with open(os.path.join(root, "labels.csv"), "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["filename", *FACTORS])
        writer.writerows(rows)
    return len(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--output_dir", default="runs/folders_demo")
    parser.add_argument("--steps", type=int, default=300, help="training steps (the preset: 10000)")
    parser.add_argument("--image_size", type=int, default=32, help="the preset: 64")
    parser.add_argument("--set_size", type=int, default=32)
    parser.add_argument("--temperature", type=float, default=1.0)
    parser.add_argument("--per_group", type=int, default=40, help="images per object instance")
    parser.add_argument("--probe_epochs", type=int, default=30)
    parser.add_argument("--mine_steps", type=int, default=2000, help="MINE steps per estimate (paper: 20000)")
    parser.add_argument("--relative_sigma", type=float, default=0.1, help="noise / embedding spread")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    from abc_tf.runs import training
    from abc_tf.runs.experiments import get_preset
    from abc_tf.evaluation.tasks import label_information
    from abc_tf.evaluation.estimators import mine, probes

    folder = os.path.join(args.output_dir, "folder")
    run_dir = os.path.join(args.output_dir, "run")
    start = time.time()
    if not os.path.exists(os.path.join(folder, "labels.csv")):
        count = make_grouped_folder(folder, per_group=args.per_group, seed=args.seed)
        print(f"wrote {count} images into {folder} in {time.time() - start:.1f} s", flush=True)
    if os.path.exists(run_dir):
        # A finished run would resume at its last step and train nothing; the demo starts afresh.
        print(f"removing the previous demo run {run_dir}", flush=True)
        shutil.rmtree(run_dir)
    config = get_preset("folders").replace(
        path=folder,
        steps=args.steps,
        log_every=min(50, args.steps),
        image_size=args.image_size,
        set_size=args.set_size,
        temperature=args.temperature,
        seed=args.seed,
    )
    start = time.time()
    result = training.train(config, run_dir, verbose=2)
    train_seconds = time.time() - start
    print(f"trained {args.steps} steps in {train_seconds:.0f} s", flush=True)

    start = time.time()
    grouped = label_information.load_labelled(config)
    measurements = {}
    for key, noise in (
        ("sigma_length_scale", {}),
        ("sigma_relative", {"relative_sigma": args.relative_sigma}),
    ):
        measurements[key] = label_information.trained_vs_untrained(
            config,
            result.encoder,
            grouped,
            label_information.LabelSettings(
                names=("group", *FACTORS),
                probe_settings=probes.ProbeSettings(epochs=args.probe_epochs),
                mine_settings=mine.MineSettings(steps=args.mine_steps, eval_samples=25_600, chunk_steps=500),
                **noise,
            ),
        )
    print(f"evaluated in {time.time() - start:.0f} s", flush=True)
    history = {key: [float(v) for v in values] for key, values in result.history.items()}
    with open(os.path.join(args.output_dir, "results.json"), "w") as handle:
        json.dump(
            {
                "config": json.loads(config.to_json()),
                "history": history,
                "train_seconds": train_seconds,
                "labels": {k: label_information.to_dict(v) for k, v in measurements.items()},
            },
            handle,
            indent=2,
        )
    text = (
        f"Final training loss {history['loss'][-1]:.3f}, "
        f"cycle accuracy {history['cycle_accuracy'][-1]:.3f}.\n\n"
        f"Noise sigma = length scale ({config.method.length_scale():g}):\n\n"
        f"{label_information.markdown_table(measurements['sigma_length_scale'])}\n\n"
        f"Noise sigma = {args.relative_sigma:g} x each embedding's spread:\n\n"
        f"{label_information.markdown_table(measurements['sigma_relative'])}\n"
    )
    with open(os.path.join(args.output_dir, "results.md"), "w") as handle:
        handle.write(text)
    print(text)


if __name__ == "__main__":
    main()
