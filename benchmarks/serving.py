"""Serving speed of the exported pose SavedModel, loaded in a fresh process without project code.

  python -m benchmarks.serving [--calls=N] [--no_write]

It exports the ``pose_quick`` encoder: S5-small on 32 x 32 RGB, with d = 64. The encoder is
untrained, since the cost does not depend on the weights. Its lookup dictionary holds 1800 poses,
the paper's size. A new Python process blocks imports of ``abc_tf`` and ``models`` and loads the
SavedModel with ``tf.saved_model.load``. It times ``embed_uint8`` and ``lookup_pose_uint8`` at batch
sizes 1, 32 and 256, in interleaved rounds after a warm-up round. It reports images/s, the median
over rounds, and per-call latency percentiles over all timed calls. A last row has 4 threads calling
one loaded model at batch 32. It writes docs/figures/benchmarks/serving.json and the "Serving
(SavedModel)" section of BENCHMARKS.md. ``section`` writes that section from the file alone.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import textwrap

from absl import app, flags

FLAGS = flags.FLAGS
flags.DEFINE_integer("calls", 0, "Timed calls per case and round (0: 100 at batch 1, 30 at 32, 6 at 256).")
flags.DEFINE_integer("rounds", 5, "Interleaved rounds; images/s is the median over rounds.")
flags.DEFINE_boolean("write", True, "Write the section of BENCHMARKS.md.")

BATCHES = (1, 32, 256)
DICTIONARY_SIZE = 1800
TITLE = "Serving (SavedModel)"
FILE = "docs/figures/benchmarks/serving.json"

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

    model_dir, calls_flag, rounds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    started = time.perf_counter()
    loaded = tf.saved_model.load(model_dir)
    results = {"load_seconds": time.perf_counter() - started}
    rng = np.random.default_rng(0)
    inputs = {
        batch: tf.constant(rng.integers(0, 256, (batch, 32, 32, 3), dtype=np.uint8))
        for batch in (1, 32, 256)
    }

    def timed_call(function, images):
        start = time.perf_counter()
        outputs = function(images)
        next(iter(outputs.values())).numpy()  # waits for the result
        return time.perf_counter() - start

    cases = [
        (endpoint, batch, 1) for endpoint in ("embed_uint8", "lookup_pose_uint8") for batch in (1, 32, 256)
    ]
    # several callers sharing one loaded model (a server's threads)
    cases.append(("lookup_pose_uint8", 32, 4))
    rates, latencies = {case: [] for case in cases}, {case: [] for case in cases}
    pool = concurrent.futures.ThreadPoolExecutor(4)
    for round_index in range(rounds + 1):  # round 0 warms up and is not counted
        for case in cases:  # interleaved, so that a busy spell of the shared machine hits every case
            endpoint, batch, threads = case
            function, images = getattr(loaded, endpoint), inputs[batch]
            calls = calls_flag or {1: 100, 32: 30, 256: 6}[batch]
            start = time.perf_counter()
            if threads == 1:
                times = [timed_call(function, images) for _ in range(calls)]
            else:
                times = list(pool.map(lambda _: timed_call(function, images), range(calls)))
            wall = time.perf_counter() - start
            if round_index:
                rates[case].append(batch * calls / wall)
                latencies[case] += times
    results["rows"] = [
        {"endpoint": endpoint, "batch": batch, "threads": threads, "rounds": rounds,
         "images_per_second": float(np.median(rates[(endpoint, batch, threads)])),
         **{f"p{q}_ms": 1e3 * float(np.percentile(latencies[(endpoint, batch, threads)], q))
            for q in (50, 90, 99)}}
        for endpoint, batch, threads in cases
    ]
    print("RESULT" + json.dumps(results))
    """
)


def export_model(path: str) -> None:
    """The pose_quick encoder with a 1800-entry dictionary, exported as train.py does."""
    import keras
    import numpy as np

    import models
    from abc_tf.runs.experiments import get_preset
    from abc_tf.runs import export
    from abc_tf.runs.run_dir import embed

    config = get_preset("pose_quick")
    keras.utils.set_random_seed(0)
    shape = (config.data.image_size, config.data.image_size, 3)
    encoder = models.build(
        config.encoder.architecture, embedding_dim=config.encoder.embedding_dim, input_shape=shape
    )
    rng = np.random.default_rng(0)
    images = rng.integers(0, 256, (DICTIONARY_SIZE, *shape), dtype=np.uint8)
    euler = np.stack(
        [
            rng.uniform(0, 2 * np.pi, DICTIONARY_SIZE),
            rng.uniform(0, 0.5, DICTIONARY_SIZE),
            rng.uniform(-0.3, 0.3, DICTIONARY_SIZE),
        ],
        -1,
    )
    export.export_pose(encoder, path, embed(encoder, images), euler, config.embedding_similarity)


def table(results: dict) -> str:
    lines = [
        "| endpoint | batch | images/s | p50 ms |",
        "|---|---|---|---|",
    ]
    for row in results["rows"]:
        if row["batch"] == 256 or (row["endpoint"] == "embed_uint8" and row["batch"] > 1):  # in the JSON
            continue
        callers = "" if row["threads"] == 1 else f", {row['threads']} callers"
        lines.append(
            f"| `{row['endpoint']}`{callers} | {row['batch']} | {row['images_per_second']:.0f} | "
            f"{row['p50_ms']:.1f} |"
        )
    return "\n".join(lines)


def section(results: dict) -> str:
    """The section of BENCHMARKS.md, from the results file alone."""
    from benchmarks import report

    rows = {(row["endpoint"], row["batch"], row["threads"]): row for row in results["rows"]}
    single, shared = rows[("lookup_pose_uint8", 32, 1)], rows[("lookup_pose_uint8", 32, 4)]
    return "\n\n".join(
        [
            f"The `pose_quick` SavedModel in a fresh process; images/s: median of {results['rounds']} "
            "rounds.",
            table(results),
            "`python -m benchmarks.serving`, "
            + report.host(results, f"no load average kept; loading took {results['load_seconds']:.1f} s"),
            "Batch 1 is mostly a restored function's per-call overhead. Four callers sharing one model get "
            f"{shared['images_per_second'] / single['images_per_second']:.2f}x one caller's images/s.",
        ]
    )


def main(argv):
    del argv
    from benchmarks import report

    with tempfile.TemporaryDirectory() as directory:
        path = os.path.join(directory, "saved_model")
        export_model(path)
        env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", "PYTHONPATH": ""}
        output = subprocess.run(
            [sys.executable, "-c", SERVE, path, str(FLAGS.calls), str(FLAGS.rounds)],
            capture_output=True,
            text=True,
            env=env,
            cwd=directory,
            check=True,
        ).stdout
    results = json.loads(
        next(line for line in output.splitlines() if line.startswith("RESULT"))[len("RESULT") :]
    )
    results.update(dictionary_size=DICTIONARY_SIZE, rounds=FLAGS.rounds, machine=report.machine_line())
    body = section(results)
    print(body)
    if FLAGS.write:
        report.write_section(TITLE, body)
        report.save_results("serving", results)


if __name__ == "__main__":
    app.run(main)
