"""Evaluates digit-style isolation of an MNIST run (paper Fig. 4): figures and a metrics JSON.

  python -m scripts.mnist_style --run_dir=runs/mnist [--out_dir=runs/mnist/style] [--data_path=...]

Writes ``retrieval.png`` (retrieval grids, untrained | trained), ``pca.png`` (PCA of the test
embeddings with thumbnails, held-out digit below) and ``mnist_metrics.json`` (style R^2,
digit probes, PCA variance; see ``abc_tf.evaluation.tasks.mnist_style.evaluate_mnist_run``).
"""

from __future__ import annotations
from abc_tf.runs import config_files

import json
import os
import sys

from absl import app, flags

FLAGS = flags.FLAGS
flags.DEFINE_string("run_dir", None, "Run directory written by train.py (encoder.keras, config.json).")
flags.DEFINE_string("out_dir", None, "Where figures and metrics go (default: <run_dir>/mnist_style).")
flags.DEFINE_string(
    "data_path", None, "Evaluate on this MNIST (IDX directory or .npz) instead of the run's data_path."
)
flags.DEFINE_integer("probe_epochs", 30, "Epochs of each digit probe.")
flags.DEFINE_integer("seed", 0, "Seed of the retrieval queries, the regression splits and the probes.")


def main(argv: list[str]) -> None:
    if len(argv) > 1:
        raise app.UsageError(f"Unexpected arguments: {' '.join(argv[1:])}")
    try:
        if not FLAGS.run_dir:
            raise ValueError("--run_dir is required.")
        from abc_tf.runs.run_dir import CONFIG_FILE
        from abc_tf.evaluation.tasks import mnist_style

        config_path = os.path.join(FLAGS.run_dir, CONFIG_FILE)
        if not os.path.isfile(config_path):
            raise ValueError(f"--run_dir={FLAGS.run_dir!r} holds no {CONFIG_FILE}.")
        with open(config_path) as handle:
            config = config_files.from_json(handle.read())
        if FLAGS.data_path:
            config = config.replace(source="auto", path=FLAGS.data_path)
        out_dir = FLAGS.out_dir or os.path.join(FLAGS.run_dir, "mnist_style")
        metrics = mnist_style.evaluate_mnist_run(
            FLAGS.run_dir, config, out_dir, probe_epochs=FLAGS.probe_epochs, seed=FLAGS.seed
        )
    except ValueError as error:
        print(f"mnist_style.py: error: {error}", file=sys.stderr)
        sys.exit(2)
    summary = {
        name: {
            "slant_r2_within_digit": metrics[name]["style_r2"]["slant"]["ridge_within_digit_seen_digits"],
            "thickness_r2_within_digit": metrics[name]["style_r2"]["thickness"][
                "ridge_within_digit_seen_digits"
            ],
            "digit_probe_accuracy": metrics[name]["digit_probe_accuracy"]["noise_at_length_scale"],
        }
        for name in ("untrained", "trained")
    }
    print(json.dumps(summary, indent=2))
    print(f"Figures and {mnist_style.METRICS_FILE} in {out_dir}")


if __name__ == "__main__":
    app.run(main)
