"""How close in style Fig. 4's retrieved images are, per method, beside two floors.

The ICLR paper's Fig. 4 claims ABC retrieves images closer in style than CC-VAE. The measure here
is ``abc_tf.evaluation.tasks.mnist_style.held_out_row_style_spread``: every test image of the held-out
digit is a query, its row the nearest test image of each other digit; per row the std of slant
and of thickness, over the pool's std, averaged over rows (lower = closer; about 1 = random).
Each row of the output is a method's runs (``seed_<k>`` folders or one run), trained and with its
initial weights (the untrained floor); the raw-pixel floor is nearest neighbours in pixel space.
``NAME=DIR@STEP`` reads each run's checkpoint at STEP instead of its finished networks.

  python -m scripts.fig4_closeness --rows=ABC=runs/fig4/abc,ML-VAE=runs/fig4/ml_vae,CC-VAE=runs/fig4/cc_vae \\
    --data_path=MNIST_DIR --output=docs/figures/fig4/closeness.json
"""

from __future__ import annotations

import argparse
import os

import numpy as np

from abc_tf import json_files
from abc_tf.data.mnist import digit_style
from abc_tf.data.mnist import family as mnist
from abc_tf.data.mnist import sources as mnist_sources
from abc_tf.evaluation.tasks import mnist_style, seeds
from abc_tf.runs.checkpoint_run import load_checkpoint_run
from abc_tf.runs.run_dir import embed, load_run, seed_run_dirs
from abc_tf.runs.training import untrained_encoder


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", required=True, help="NAME=DIR,... : a method's runs per row.")
    parser.add_argument("--data_path", default="", help="The MNIST to measure on (default: each run's own).")
    parser.add_argument("--output", required=True, help="The JSON file to write.")
    args = parser.parse_args()
    rows, pixels, data_source, holdout = {}, None, "", None
    for entry in args.rows.split(","):
        name, _, folder = entry.partition("=")
        folder, _, at_step = folder.partition("@")
        if not name or not folder:
            raise SystemExit(f"--rows: write NAME=DIR or NAME=DIR@STEP, got {entry!r}.")
        trained, untrained, steps, runs = [], [], [], seed_run_dirs(folder) or [folder]
        for run_dir in runs:
            run = load_checkpoint_run(run_dir, int(at_step)) if at_step else load_run(run_dir)
            config = run.config.replace(path=args.data_path) if args.data_path else run.config
            data = mnist_sources.load_mnist(config)
            images, labels = np.asarray(data.x_test), np.asarray(data.y_test).astype(np.int64)
            holdout = mnist.parse_holdout_digit(config.data.holdout_digit)
            if holdout is None:
                raise SystemExit(f"{run_dir}: trained without a held-out digit; Fig. 4 holds one out.")
            measures = digit_style.style_measures(images)
            for model, out in ((run.encoder, trained), (untrained_encoder(config), untrained)):
                embeddings = embed(model, images[..., np.newaxis], batch_size=2000)
                out.append(
                    mnist_style.held_out_row_style_spread(
                        embeddings, labels, measures, holdout, config.embedding_similarity
                    )
                )
            steps.append(int(at_step) if at_step else config.trainer.steps)
            if pixels is None:
                flat = images.reshape(len(images), -1).astype(np.float64)
                pixels = mnist_style.held_out_row_style_spread(flat, labels, measures, holdout, "l2sq")
                data_source = data.source
            print(f"{name} {run_dir}: trained {trained[-1]}, untrained {untrained[-1]}", flush=True)
        rows[name] = {
            "runs": runs,
            "steps": steps,
            "trained": seeds.aggregate_numbers(trained),
            "untrained": seeds.aggregate_numbers(untrained),
        }
    if args.data_path:
        data_source = data_source.replace(os.path.abspath(args.data_path), "MNIST_DIR")
    results = {
        "command": f"python -m scripts.fig4_closeness --rows={args.rows}"
        + (" --data_path=MNIST_DIR" if args.data_path else "")
        + f" --output={args.output}",
        "data": data_source,
        "holdout_digit": holdout,
        "raw_pixels": pixels,
        "rows": rows,
    }
    json_files.write_json(args.output, results)
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
