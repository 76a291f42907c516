"""Retrieval grids over the course of training (supplement Fig. S7, L116): for each method, the
MNIST retrieval grid of its embedding at each evaluated checkpoint, side by side.

  python curves.py --run_dir=runs/fig4/ml_vae/seed_0 --checkpoints=1000,5000,20000,84455 \\
      --disentanglement=none --output_dir=runs/fig4/curve_ml_vae          # and the other methods
  python -m scripts.retrieval_over_training --data_path=MNIST_DIR \\
      --rows=ABC=runs/fig4/curve_abc,ML-VAE=runs/fig4/curve_ml_vae \\
      --output_dir=docs/figures/fig4/over_training

MNIST_DIR: a folder holding the four MNIST IDX files (train-images-idx3-ubyte[.gz] and the others).
Each row is the output folder of ``curves.py`` on one run: the grids are those
its evaluations drew (``checkpoints/step_<S>/mnist_metrics.json``), so every panel has the same
queries (the evaluator's seed). ``--data_path`` must be the MNIST they were evaluated on (none:
the built-in procedural digits). Writes ``<row>.png`` per row (one panel per step) and
``over_training.json`` (per row and step: the checkpoint, how uniform each retrieval row's slant
and thickness are, and the style R^2 on the held-out digit, as ``curve.json`` has them).
"""

from __future__ import annotations

import argparse
import json
import os
import re

import numpy as np

from scripts.pose_table_s1 import parse_rows

OUTPUT_JSON = "over_training.json"


def checkpoint_grids(curve_dir: str) -> list[tuple[int, dict]]:
    """[(step, mnist_metrics.json)] of ``curve_dir``'s evaluated checkpoints, by step."""
    folder = os.path.join(curve_dir, "checkpoints")
    steps = sorted(
        int(match.group(1))
        for name in (os.listdir(folder) if os.path.isdir(folder) else [])
        if (match := re.fullmatch(r"step_(\d+)", name))
    )
    found = [(step, os.path.join(folder, f"step_{step}", "mnist_metrics.json")) for step in steps]
    found = [(step, path) for step, path in found if os.path.isfile(path)]
    if not found:
        raise ValueError(
            f"{curve_dir} holds no checkpoints/step_<S>/mnist_metrics.json: run curves.py "
            f"--checkpoints=... --output_dir={curve_dir} on an MNIST run first."
        )
    result = []
    for step, path in found:
        with open(path) as handle:
            result.append((step, json.load(handle)))
    return result


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--rows",
        required=True,
        help="NAME=DIR pairs, comma-separated: a method's name and the "
        "--output_dir of curves.py on one of its runs.",
    )
    parser.add_argument(
        "--data_path",
        default="",
        help="The MNIST the checkpoints were evaluated on (IDX directory "
        "or .npz; none: the built-in procedural digits).",
    )
    parser.add_argument("--output_dir", required=True, help="Where <row>.png and over_training.json go.")
    args = parser.parse_args(argv)

    from abc_tf.data.mnist import sources as mnist_sources
    from abc_tf.evaluation.tasks import retrieval
    from abc_tf.runs import experiments

    rows = parse_rows(args.rows.split(","))
    config = experiments.get_preset("mnist").replace(
        source="auto" if args.data_path else "procedural", path=args.data_path
    )
    data = mnist_sources.load_mnist(config)
    images, labels = np.asarray(data.x_test), np.asarray(data.y_test)
    os.makedirs(args.output_dir, exist_ok=True)
    summary: dict = {"data_source": data.source, "rows": {}}
    for name, curve_dir in rows:
        panels, steps = [], {}
        for step, metrics in checkpoint_grids(curve_dir):
            if metrics["data_source"] != data.source or metrics["num_test_images"] != len(labels):
                raise ValueError(
                    f"{curve_dir} step {step} was evaluated on {metrics['num_test_images']} "
                    f"{metrics['data_source']} test images, not these {len(labels)} {data.source} ones: "
                    "pass the --data_path it was evaluated on."
                )
            trained = metrics["trained"]
            grid = retrieval.RetrievalGrid(
                **{key: np.asarray(value) for key, value in trained["retrieval_grid"].items()}
            )
            panels.append((f"step {step}", grid))
            steps[str(step)] = {
                "queries": np.diag(grid.indices).tolist(),
                "retrieval_row_style_spread": trained["retrieval_row_style_spread"],
                "style_r2_held_out_digit": {
                    factor: fits["ridge_within_digit_holdout_digit"]
                    for factor, fits in trained["style_r2"].items()
                    if "ridge_within_digit_holdout_digit" in fits
                },
            }
        queries = {tuple(step["queries"]) for step in steps.values()}
        if len(queries) > 1:
            raise ValueError(
                f"{curve_dir}: the checkpoints' grids have different queries "
                "(evaluated with different seeds)."
            )
        figure = os.path.join(
            args.output_dir, f"{re.sub(r'[^A-Za-z0-9]+', '_', name).strip('_').lower()}.png"
        )
        retrieval.plot_retrieval_grids(
            images,
            panels,
            figure,
            ink=True,
            caption=f"{name}: red, the queries; column c, the nearest test image of digit c",
        )
        summary["rows"][name] = {"curve_dir": curve_dir, "figure": os.path.basename(figure), "steps": steps}
        print(f"{name}: {len(steps)} checkpoints -> {figure}")
    with open(os.path.join(args.output_dir, OUTPUT_JSON), "w") as handle:
        json.dump(summary, handle, indent=1)


if __name__ == "__main__":
    main()
