"""What a Shapes3D run's evaluation spends its time on, stage by stage, and the faster choices.

On a finished Shapes3D run (the README's ``runs/demo``), in one process:

- embedding: the 23,100 images of the "fast" disentanglement preset embedded by the encoder's
  eager Keras call and by the traced call ``abc_tf.runs.run_dir.embed`` uses (CPU seconds, and
  the largest difference of the codes);
- rendering: the same 23,100 factor draws rendered by ``scenes.render`` (NumPy) and by a graph
  render written here (``tf.gather`` and a batched matmul), warm, with the pixels that differ,
  and the one-time ray cast of the weight tables;
- DCI: the "fast" preset's DCI with exact gradient-boosted trees (the library's) and with
  histogram trees on the same schedule (the preset's default), at three seeds: CPU seconds and
  the scores, so that the shift of the scores stands beside the seed spread;
- with ``--evaluate``, the whole ``abc_tf evaluate --run_dir=RUN`` in a child process: its wall
  and CPU seconds.

Writes docs/figures/benchmarks/evaluation_stages.json and the section of BENCHMARKS.md.

  python -m benchmarks.evaluation_stages --run_dir=runs/demo [--evaluate] [--no_write]
"""

from __future__ import annotations

import os
import re
import resource
import subprocess
import sys
import tempfile
import time

import numpy as np

from benchmarks import report

TITLE = "Evaluation of a Shapes3D run, stage by stage (CPU)"
FILE = "docs/figures/benchmarks/evaluation_stages.json"
SEEDS = (0, 1, 2)


def _cpu(function):
    """(result, CPU seconds of every thread of this process) of ``function()``."""
    start = time.process_time()
    result = function()
    return result, time.process_time() - start


def measure_embedding_and_rendering(run_dir: str) -> dict:
    import keras
    import tensorflow as tf

    from abc_tf.data.shapes3d import scenes
    from abc_tf.evaluation.estimators.disentanglement import ScoreSettings
    from abc_tf.methods.base import to_float_images
    from abc_tf.runs import run_dir as runs

    codes = ScoreSettings.fast().codes_drawn()
    draws = np.random.default_rng(0).integers(0, [10, 10, 10, 8, 4, 15], size=(codes, 6))
    _, cold_tables = _cpu(scenes.weight_tables)
    tables = tf.constant(scenes.weight_tables())
    colours = tf.constant(scenes.hue_to_rgb(scenes.HUES) * 255.0, tf.float32)  # as scenes.render mixes them

    @tf.function(input_signature=[tf.TensorSpec([None, 6], tf.int64)])
    def graph_render(factors):
        weights = tf.reshape(tf.gather_nd(tables, factors[:, 3:6]), [-1, 64 * 64, 3])
        image = tf.linalg.matmul(weights, tf.gather(colours, factors[:, :3]))
        return tf.reshape(tf.cast(tf.floor(image + 0.5), tf.uint8), [-1, 64, 64, 3])

    graph_render(draws[:8])
    scenes.render(draws[:8])
    images, numpy_seconds = _cpu(lambda: scenes.render(draws))
    graph_images, graph_seconds = _cpu(lambda: graph_render(draws).numpy())

    encoder = runs.load_run(run_dir).encoder

    def eager():
        return np.concatenate(
            [
                np.asarray(
                    encoder(
                        to_float_images(tf.convert_to_tensor(images[start : start + 256])), training=False
                    )
                )
                for start in range(0, len(images), 256)
            ]
        )

    runs.embed(encoder, images[:300])  # traces
    eager_codes, eager_seconds = _cpu(eager)
    traced_codes, traced_seconds = _cpu(lambda: runs.embed(encoder, images))
    keras.backend.clear_session()
    return {
        "images": codes,
        "weight_tables_cpu_s": cold_tables,
        "render_numpy_cpu_s": numpy_seconds,
        "render_graph_cpu_s": graph_seconds,
        "render_pixels_differing": int(np.sum(images != graph_images)),
        "embed_eager_cpu_s": eager_seconds,
        "embed_traced_cpu_s": traced_seconds,
        "embed_largest_difference": float(np.max(np.abs(eager_codes - traced_codes))),
    }


def measure_dci(run_dir: str) -> dict:
    import dataclasses

    from abc_tf.evaluation.estimators.disentanglement import ScoreSettings
    from abc_tf.evaluation.tasks.encoder_disentanglement import evaluate_disentanglement
    from abc_tf.runs import run_dir as runs

    run = runs.load_run(run_dir)
    rows = []
    for trees in ("exact", "histogram"):
        settings = dataclasses.replace(ScoreSettings.fast(), dci_trees=trees)
        for seed in SEEDS:
            start = time.process_time()
            result = evaluate_disentanglement(run.encoder, run.config, settings, seed, scores=("dci",))
            total = time.process_time() - start
            # The codes' share of the CPU time, by its share of the wall time.
            trees_cpu = total * (1 - result["encode_seconds"] / result["seconds"])
            rows.append({"trees": trees, "seed": seed, "cpu_s": trees_cpu, **result["scores"]})
            print(rows[-1], flush=True)
    return {"rows": rows}


def measure_evaluate(run_dir: str) -> dict:
    """The whole evaluation in a child process: wall and CPU seconds (user + system), and the
    wall seconds of each stage as evaluate prints them ("[evaluate] <stage>: <s> s")."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as output:
        completed = subprocess.run(
            [sys.executable, "-m", "abc_tf", "evaluate", f"--run_dir={run_dir}", f"--output_dir={output}"],
            check=True,
            cwd=report.ROOT,
            env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"},
            capture_output=True,
            text=True,
        )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    stages = {
        match.group(1): float(match.group(2))
        for match in re.finditer(
            r"^\[evaluate\] (.+?): ([0-9.]+) s$", completed.stdout + completed.stderr, re.M
        )
    }
    return {"wall_s": time.perf_counter() - start, "cpu_s": cpu, "stages_wall_s": stages}


def _link(path: str, value: float, digits: int) -> str:
    return f"[{value:.{digits}f}]({FILE}#/{path})"


def table(results: dict, command: str, load_start: float) -> str:
    stages = results["stages"]
    lines = [
        f"{report.machine_line()} {report.load_line(load_start)}",
        "",
        f"Command: `{command}`. CPU seconds count every thread of the process.",
        "",
        f"| stage ({stages['images']} images) | as before | now | differences |",
        "|---|---|---|---|",
        f"| embed (S3 encoder) | eager Keras call {_link('stages/embed_eager_cpu_s', stages['embed_eager_cpu_s'], 1)} | "
        f"traced call {_link('stages/embed_traced_cpu_s', stages['embed_traced_cpu_s'], 1)} | largest code "
        f"difference {_link('stages/embed_largest_difference', stages['embed_largest_difference'], 1)} |",
        f"| render (warm) | NumPy {_link('stages/render_numpy_cpu_s', stages['render_numpy_cpu_s'], 1)} | NumPy "
        f"(a graph render takes {_link('stages/render_graph_cpu_s', stages['render_graph_cpu_s'], 1)}) | pixels "
        f"differing from the graph render: {stages['render_pixels_differing']} |",
        f"| weight tables (ray cast once a process) | {_link('stages/weight_tables_cpu_s', stages['weight_tables_cpu_s'], 1)} "
        "| the same | - |",
        "",
        "DCI of the \"fast\" preset (1,000 training and 500 test codes of the run's encoder), the trees' CPU seconds:",
        "",
        "| trees | seed | CPU s | D | C | I (test) |",
        "|---|---|---|---|---|---|",
    ]
    for index, row in enumerate(results["dci"]["rows"]):
        path = f"dci/rows/{index}"
        lines.append(
            f"| {row['trees']} | {row['seed']} | {_link(path + '/cpu_s', row['cpu_s'], 1)} | "
            f"{_link(path + '/dci_disentanglement', row['dci_disentanglement'], 3)} | "
            f"{_link(path + '/dci_completeness', row['dci_completeness'], 3)} | "
            f"{_link(path + '/dci_informativeness', row['dci_informativeness'], 3)} |"
        )
    if "evaluate" in results:
        lines += [
            "",
            f"`abc_tf evaluate --run_dir={results['run_dir']}` (MINE's 20,000 steps, the fast disentanglement "
            f"preset): {_link('evaluate/wall_s', results['evaluate']['wall_s'], 0)} s wall, "
            f"{_link('evaluate/cpu_s', results['evaluate']['cpu_s'], 0)} CPU seconds. Its stages, wall seconds:",
        ]
        lines += [
            f"- {stage}: {seconds:.0f}" for stage, seconds in results["evaluate"]["stages_wall_s"].items()
        ]
    return "\n".join(lines)


def main() -> None:
    parser = report.argument_parser(__doc__)
    parser.add_argument("--run_dir", default="runs/demo", help="A finished Shapes3D run.")
    parser.add_argument("--evaluate", action="store_true", help="Also time the whole evaluation of the run.")
    args = parser.parse_args()
    load_start = os.getloadavg()[0]
    results = {"run_dir": args.run_dir, "stages": measure_embedding_and_rendering(args.run_dir)}
    print(results, flush=True)
    results["dci"] = measure_dci(args.run_dir)
    if args.evaluate:
        results["evaluate"] = measure_evaluate(args.run_dir)
    if not args.no_write:
        report.save_results("evaluation_stages", results)
    command = f"python -m benchmarks.evaluation_stages --run_dir={args.run_dir}" + (
        " --evaluate" if args.evaluate else ""
    )
    report.publish(TITLE, table(results, command, load_start), not args.no_write)


if __name__ == "__main__":
    main()
