"""What a Shapes3D run's evaluation spends its time on, stage by stage, and the faster choices.

It works on a finished Shapes3D run, such as the README's ``runs/demo``, in one process:

- embedding: the 23,100 images of the "fast" disentanglement preset. The encoder's eager Keras call
  embeds them, and so does the traced call that ``abc_tf.runs.run_dir.embed`` uses. It reports CPU
  seconds and the largest difference of the codes.
- rendering: the same 23,100 factor draws, rendered warm by ``scenes.render`` in NumPy and by a graph
  render written here with ``tf.gather`` and a batched matmul. It reports the pixels that differ, and
  the one-time ray cast of the weight tables.
- DCI: the "fast" preset's DCI with the library's exact gradient-boosted trees, and with histogram
  trees on the same schedule, the preset's default. It runs at three seeds and reports CPU seconds
  and the scores. So the shift of the scores stands beside the seed spread.
- with ``--evaluate``: the whole ``abc_tf evaluate --run_dir=RUN`` in a child process, its wall and
  CPU seconds.

Writes docs/figures/benchmarks/evaluation_stages.json and the section of BENCHMARKS.md.

  python -m benchmarks.evaluation_stages --run_dir=runs/demo [--evaluate] [--no_write]
  python -m benchmarks.evaluation_stages --table_only   # the section again from the JSON
"""

from __future__ import annotations

import os
import re
import resource
import subprocess
import sys
import tempfile
import time
import urllib.parse

import numpy as np

from benchmarks import report

TITLE = "Evaluation of a Shapes3D run, stage by stage (CPU)"
FILE = "docs/figures/benchmarks/evaluation_stages.json"
SEEDS = (0, 1, 2)
DCI_KEYS = ("dci_disentanglement", "dci_completeness", "dci_informativeness")


def _cpu(function):
    """A pair: the result of ``function()``, and the CPU seconds of every thread of this process."""
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
    """The whole evaluation in a child process: its wall seconds and CPU seconds, user + system.
    Also the wall seconds of each stage, as evaluate prints them: ``[evaluate] <stage>: <s> s``."""
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


def _spread(values: list[float], digits: int) -> str:
    """``low-high`` of ``values`` at ``digits`` decimals."""
    return f"{min(values):.{digits}f}-{max(values):.{digits}f}"


def _stage_rows(stages: dict) -> list[str]:
    def cell(key: str, digits: int = 1) -> str:
        return _link(f"stages/{key}", stages[key], digits)

    return [
        f"| embed, traced call (used) | {cell('embed_traced_cpu_s')} |",
        f"| render, NumPy (used) | {cell('render_numpy_cpu_s')} |",
        f"| render, graph | {cell('render_graph_cpu_s')} |",
    ]


def section(results: dict) -> str:
    """The section of BENCHMARKS.md, from the results file alone."""
    lines = [
        f'CPU seconds of evaluating `{results["run_dir"]}`, and DCI ("fast") by tree kind over seeds.',
        "",
        f"| stage, {results['stages']['images']} images | CPU s |",
        "|---|---|",
        *_stage_rows(results["stages"]),
        "",
        "| trees | seeds | CPU s | D | C | I (test) |",
        "|---|---|---|---|---|---|",
    ]
    rows = results["dci"]["rows"]
    for trees in dict.fromkeys(row["trees"] for row in rows):
        mine = [row for row in rows if row["trees"] == trees]
        cells = [_spread([row["cpu_s"] for row in mine], 1)]
        cells += [_spread([row[key] for row in mine], 3) for key in DCI_KEYS]
        lines.append(f"| {trees} | {len(mine)} | " + " | ".join(cells) + " |")
    lines += ["", f"`{results['command']}`, {report.host(results)}"]
    if "evaluate" in results:
        run = results["evaluate"]
        stages = ", ".join(
            f"{stage.split(' of ')[0]} "
            f"{_link('evaluate/stages_wall_s/' + urllib.parse.quote(stage, safe=''), seconds, 0)} s"
            for stage, seconds in run["stages_wall_s"].items()
        )
        lines += [
            "",
            f"`abc_tf evaluate --run_dir={results['run_dir']}` "
            f"took {_link('evaluate/wall_s', run['wall_s'], 0)} s wall and "
            f"{_link('evaluate/cpu_s', run['cpu_s'], 0)} CPU seconds: {stages}.",
        ]
    return "\n".join(lines)


def main() -> None:
    parser = report.argument_parser(__doc__)
    parser.add_argument("--run_dir", default="runs/demo", help="A finished Shapes3D run.")
    parser.add_argument("--evaluate", action="store_true", help="Also time the whole evaluation of the run.")
    parser.add_argument(
        "--table_only", action="store_true", help=f"Write the section from {FILE}; measure nothing."
    )
    args = parser.parse_args()
    if args.table_only:
        report.publish(TITLE, section(report.read_results(FILE)), not args.no_write)
        return
    load_start = os.getloadavg()[0]
    results = {"run_dir": args.run_dir, "stages": measure_embedding_and_rendering(args.run_dir)}
    print(results, flush=True)
    results["dci"] = measure_dci(args.run_dir)
    if args.evaluate:
        results["evaluate"] = measure_evaluate(args.run_dir)
    results["command"] = f"python -m benchmarks.evaluation_stages --run_dir={args.run_dir}" + (
        " --evaluate" if args.evaluate else ""
    )
    results["machine"] = f"{report.machine_line()} {report.load_line(load_start)}"
    if not args.no_write:
        report.save_results("evaluation_stages", results)
    report.publish(TITLE, section(results), not args.no_write)


if __name__ == "__main__":
    main()
