"""Serving speed of the exported pose SavedModel, loaded in a fresh process without project code.

  python benchmarks/serving.py [--calls=N] [--no_write]

Exports the ``pose_quick`` encoder (S5-small, 32 x 32 RGB, d = 64; untrained: the cost does
not depend on the weights) with a lookup dictionary of 1800 poses (the paper's size), then
starts a new Python process that blocks imports of ``abc_tf`` and ``models``, loads the
SavedModel with ``tf.saved_model.load`` and times ``embed_uint8`` and ``lookup_pose_uint8``
at batch sizes 1, 32 and 256: images/s over all timed calls and per-call latency percentiles
(after warm-up calls, which trace nothing but fill TensorFlow's caches). A last row has 4
threads calling one loaded model at batch 32. Writes the "Serving (SavedModel)" section of
BENCHMARKS.md.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import textwrap

from absl import app, flags

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

FLAGS = flags.FLAGS
flags.DEFINE_integer("calls", 0, "Timed calls per batch size (0: 200 at batch 1, 60 at 32, 15 at 256).")
flags.DEFINE_boolean("write", True, "Write the section of BENCHMARKS.md.")

BATCHES = (1, 32, 256)
DICTIONARY_SIZE = 1800

# Runs in a fresh interpreter that cannot import the project: only TensorFlow serves the model.
SERVE = textwrap.dedent(
    """
    import concurrent.futures, importlib.abc, json, sys, time

    class NoProject(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in ("abc_tf", "models"):
                raise ImportError(f"{name} must not be needed to serve the SavedModel")

    sys.meta_path.insert(0, NoProject())
    import numpy as np
    import tensorflow as tf

    model_dir, calls_flag = sys.argv[1], int(sys.argv[2])
    started = time.perf_counter()
    loaded = tf.saved_model.load(model_dir)
    results = {"load_seconds": time.perf_counter() - started, "rows": []}
    rng = np.random.default_rng(0)
    for endpoint in ("embed_uint8", "lookup_pose_uint8"):
        function = getattr(loaded, endpoint)
        for batch in (1, 32, 256):
            calls = calls_flag or {1: 200, 32: 60, 256: 15}[batch]
            images = tf.constant(rng.integers(0, 256, (batch, 32, 32, 3), dtype=np.uint8))
            for _ in range(3):
                function(images)
            latencies = []
            for _ in range(calls):
                start = time.perf_counter()
                outputs = function(images)
                next(iter(outputs.values())).numpy()  # waits for the result
                latencies.append(time.perf_counter() - start)
            latencies = np.array(latencies)
            results["rows"].append({
                "endpoint": endpoint, "batch": batch, "threads": 1, "calls": calls,
                "images_per_second": batch * calls / latencies.sum(),
                "p50_ms": 1e3 * np.percentile(latencies, 50), "p90_ms": 1e3 * np.percentile(latencies, 90),
                "p99_ms": 1e3 * np.percentile(latencies, 99),
            })
    # Several callers sharing one loaded model (a server's worker threads).
    images = tf.constant(rng.integers(0, 256, (32, 32, 32, 3), dtype=np.uint8))
    calls = calls_flag or 60

    def timed_call(_):
        start = time.perf_counter()
        loaded.lookup_pose_uint8(images)["neighbour_index"].numpy()
        return time.perf_counter() - start

    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        list(pool.map(timed_call, range(8)))
        start = time.perf_counter()
        latencies = np.array(list(pool.map(timed_call, range(calls))))
        wall = time.perf_counter() - start
    results["rows"].append({
        "endpoint": "lookup_pose_uint8", "batch": 32, "threads": 4, "calls": calls,
        "images_per_second": 32 * calls / wall,
        "p50_ms": 1e3 * np.percentile(latencies, 50), "p90_ms": 1e3 * np.percentile(latencies, 90),
        "p99_ms": 1e3 * np.percentile(latencies, 99),
    })
    print("RESULT" + json.dumps(results))
    """
)


def export_model(path: str) -> None:
    """The pose_quick encoder with a 1800-entry dictionary, exported as train.py does."""
    import keras
    import numpy as np

    import models
    from abc_tf import export
    from abc_tf.config import get_preset
    from abc_tf.evaluation import isolation

    config = get_preset("pose_quick")
    keras.utils.set_random_seed(0)
    shape = (config.image_size, config.image_size, 3)
    encoder = models.build(config.model, embedding_dim=config.embedding_dim, input_shape=shape)
    rng = np.random.default_rng(0)
    images = rng.integers(0, 256, (DICTIONARY_SIZE, *shape), dtype=np.uint8)
    euler = np.stack([rng.uniform(0, 2 * np.pi, DICTIONARY_SIZE), rng.uniform(0, 0.5, DICTIONARY_SIZE),
                      rng.uniform(-0.3, 0.3, DICTIONARY_SIZE)], -1)
    export.export_pose(encoder, path, isolation.embed_images(encoder, images), euler, config.similarity)


def table(results: dict) -> str:
    lines = [
        "| endpoint | batch | callers | images/s | p50 ms | p90 ms | p99 ms |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in results["rows"]:
        lines.append(
            f"| `{row['endpoint']}` | {row['batch']} | {row['threads']} | {row['images_per_second']:.0f} | "
            f"{row['p50_ms']:.1f} | {row['p90_ms']:.1f} | {row['p99_ms']:.1f} |"
        )
    return "\n".join(lines)


def main(argv):
    del argv
    from benchmarks import report

    with tempfile.TemporaryDirectory() as directory:
        path = os.path.join(directory, "saved_model")
        export_model(path)
        env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", "PYTHONPATH": ""}
        output = subprocess.run(
            [sys.executable, "-c", SERVE, path, str(FLAGS.calls)], capture_output=True, text=True, env=env,
            cwd=directory, check=True,
        ).stdout
    results = json.loads(next(line for line in output.splitlines() if line.startswith("RESULT"))[len("RESULT"):])
    body = "\n\n".join([
        "`python benchmarks/serving.py`: the `pose_quick` SavedModel (S5-small encoder, 32 x 32 RGB, d = 64, "
        f"a lookup dictionary of {DICTIONARY_SIZE} poses baked in), loaded with `tf.saved_model.load` in a fresh "
        "process that cannot import the project, called as in the README (`m.embed_uint8(images)`, "
        "`m.lookup_pose_uint8(images)`) with uint8 NumPy-made tensors. Latency is per call, from the call to "
        "the result in memory; images/s is over all timed calls (the 4-caller row: wall-clock over all of "
        f"them). Loading took {results['load_seconds']:.1f} s.",
        table(results),
        "Batch 1 is dominated by the per-call overhead of a restored function (input checks, the dtype "
        "dispatch); batches of 32 or more amortise it. The lookup adds a [B, 1800] similarity and an "
        "argmax to the embedding. Several threads calling one loaded model is safe (tests/test_export.py "
        "checks they get one caller's answers); on these 2 shared cores they do not add throughput, "
        "since one call already uses the cores.",
        report.machine_line(),
    ])
    print(body)
    if FLAGS.write:
        report.write_section("Serving (SavedModel)", body)


if __name__ == "__main__":
    app.run(main)
