"""Pose lookup against dictionary size: queries/s and memory for dictionaries of 10^3 to 10^6 embeddings.

Three lookups are timed: the exported ``lookup_pose``, ``nearest_neighbours`` and the evaluation's
50-dictionary protocol. The embeddings are random, with the pose presets' size 64 and cosine
similarity. There are no images and no trained model.

- ``lookup_pose``: a real SavedModel written by ``abc_tf.runs.export.export_pose``. Its encoder only
  flattens its [1, 1, 64] "images", so a call is the dictionary search and nothing else. Calls hold
  1 image, serving one at a time, or 256.
- ``nearest_neighbours`` from abc_tf.evaluation.tasks.pose_accuracy: exact top-1 by chunks of
  queries, 256 queries.
- ``lookup_evaluation``: 500 queries, the procedural test set, against 50 random dictionaries of N.
  They are drawn from a pool of 4N, ``PoseEvalSettings``' default pool, as ``evaluate.py`` runs it.

Memory is the peak resident memory a call adds to the process: ``VmHWM`` after the call minus
``VmRSS`` before it. Before the call, /proc/self/clear_refs resets the peak and ``malloc_trim``
hands freed heap back. It is taken on the first call of its shape, for ``lookup_pose`` in a fresh
process. TensorFlow with oneDNN keeps a call's buffers for the next call of the same shape. Inputs
already held are not counted.

Writes docs/figures/benchmarks/lookup_scaling.json, its two figures and the section of BENCHMARKS.md,
all from that file's results.

  python -m benchmarks.lookup_scaling [--sizes 1000,10000,100000,1000000] [--seconds 1.0] [--no_write]
"""

from __future__ import annotations

import argparse
import ctypes
import os
import shutil
import subprocess
import sys
import tempfile
import time

import keras
import numpy as np
import tensorflow as tf
from scipy.spatial.transform import Rotation

from abc_tf.runs import export
from abc_tf.runs.experiments import get_preset
from abc_tf import lookup
from abc_tf.evaluation.tasks import pose_accuracy
from benchmarks import report
from benchmarks.report import (
    FIGURES,
    ROOT,
    argument_parser,
    log_log_axes,
    measured,
    publish,
    save_results,
)

TITLE = "Pose lookup against dictionary size"
FILE = "docs/figures/benchmarks/lookup_scaling.json"
BATCH = 256
EVAL_QUERIES = 500
REPEATS = 50
POOL_FACTOR = 4  # PoseEvalSettings: pool_size 0 means 4 x dictionary_size
SERVING_LIMIT_S = 0.010  # the latency of one image per call that brute force is judged against
_LIBC = ctypes.CDLL("libc.so.6")


def _status_kb(field: str) -> int:
    with open("/proc/self/status") as handle:
        for line in handle:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise KeyError(field)


def added_peak_mb(function) -> tuple[float, object]:
    """A pair: the peak resident MB that ``function`` adds to the process, and its result."""
    _LIBC.malloc_trim(0)  # freed memory kept by the heap would hide new allocations
    with open("/proc/self/clear_refs", "w") as handle:
        handle.write("5")  # resets VmHWM to the current VmRSS
    before = _status_kb("VmRSS")
    result = function()
    return (_status_kb("VmHWM") - before) / 1024, result


def timed(function, seconds: float, min_calls: int = 3) -> float:
    """Seconds per call of ``function``, over at least ``min_calls`` calls and about ``seconds``."""
    calls, start = 0, time.perf_counter()
    while calls < min_calls or time.perf_counter() - start < seconds:
        function()
        calls += 1
    return (time.perf_counter() - start) / calls


def _export_call(model, batch: int, dim: int):
    # Images in [0, 1] as the endpoint checks; the flattening encoder makes them the embeddings.
    images = tf.constant(np.random.default_rng(batch).random((batch, 1, 1, dim), dtype=np.float32))
    return lambda: model.lookup_pose(images)["neighbour_index"].numpy()


def export_memory(spec: str) -> None:
    """Prints the peak MB that the first ``lookup_pose`` call of a batch adds.
    ``spec`` is ``PATH,BATCH,DIM``."""
    path, batch, dim = spec.split(",")
    call = _export_call(tf.saved_model.load(path), int(batch), int(dim))
    print(added_peak_mb(call)[0])


def measure(size: int, dim: int, similarity: str, seconds: float) -> dict:
    rng = np.random.default_rng(size)
    row = {"size": size}
    keys = rng.normal(size=(size, dim)).astype(np.float32)
    queries = rng.normal(size=(max(BATCH, EVAL_QUERIES), dim)).astype(np.float32)

    # The floor of any exact search: reading every key once (a numpy sum, one thread).
    row["scan_s"] = timed(lambda: keys.sum(), seconds)

    # The exported endpoint, as a user loads it.
    encoder = keras.Sequential([keras.Input((1, 1, dim)), keras.layers.Flatten()])
    folder = tempfile.mkdtemp(prefix="lookup_scaling_")
    try:
        start = time.perf_counter()
        euler = rng.uniform(-1, 1, size=(size, 3))
        export.export_pose(encoder, os.path.join(folder, "model"), keys, euler, similarity)
        row["export_s"] = time.perf_counter() - start
        path = os.path.join(folder, "model")
        model = tf.saved_model.load(path)
        for batch in (1, BATCH):
            call = _export_call(model, batch, dim)
            call()  # warm up
            row[f"export_{batch}_s"] = timed(call, seconds)
            # TensorFlow (oneDNN) keeps a call's buffers for later calls of the same shape, so
            # the memory of a call is measured on its first call, in a fresh process.
            command = [
                sys.executable,
                "-m",
                "benchmarks.lookup_scaling",
                "--export_memory",
                f"{path},{batch},{dim}",
            ]
            output = subprocess.run(command, check=True, capture_output=True, text=True, cwd=ROOT).stdout
            row[f"export_{batch}_mb"] = float(output.split()[-1])
        del model
    finally:
        shutil.rmtree(folder, ignore_errors=True)

    # The library's exact top-1 search, by chunks of queries.
    call = lambda: lookup.nearest_neighbours(queries[:BATCH], keys, similarity)  # noqa: E731
    row["nn_mb"], _ = added_peak_mb(call)  # the first call: see the note on oneDNN above
    row["nn_s"] = timed(call, seconds)

    # The evaluation's protocol: 50 dictionaries of `size` from a pool of 4 x size.
    pool = np.concatenate([keys, rng.normal(size=((POOL_FACTOR - 1) * size, dim)).astype(np.float32)])
    pool_rotations = Rotation.random(len(pool), random_state=1).as_matrix()
    query_rotations = Rotation.random(EVAL_QUERIES, random_state=2).as_matrix()

    def call():
        return pose_accuracy.lookup_evaluation(
            queries[:EVAL_QUERIES], query_rotations, pool, pool_rotations, similarity, size, REPEATS, seed=0
        )

    start = time.perf_counter()
    row["eval_mb"], _ = added_peak_mb(call)
    row["eval_s"] = time.perf_counter() - start
    row["pool_mb"] = pool.nbytes / 1e6
    # What the protocol held before it went by chunks: the [Q, pool] matrix, then [Q, N] per dictionary.
    row["old_eval_mb"] = EVAL_QUERIES * (POOL_FACTOR + 1) * size * 4 / 2**20
    print({k: round(v, 4) if isinstance(v, float) else v for k, v in row.items()}, flush=True)
    return row


def plot(results: dict, path_rate: str, path_memory: str) -> None:
    """The two figures, queries/s and memory against N, from the results alone."""
    rows, batch, eval_queries, repeats = (results[k] for k in ("rows", "batch", "eval_queries", "repeats"))
    sizes = [r["size"] for r in rows]
    xlabel = "dictionary size (embeddings)"
    title = f"Pose lookup against dictionary size (d={results['dim']}, {results['similarity']})"
    with log_log_axes(path_rate, xlabel, "queries/s", title, legend_size=8) as ax:
        ax.plot(sizes, [1 / r["export_1_s"] for r in rows], "o-", label="lookup_pose, 1 image per call")
        ax.plot(
            sizes,
            [batch / r[f"export_{batch}_s"] for r in rows],
            "s-",
            label=f"lookup_pose, {batch} per call",
        )
        ax.plot(sizes, [batch / r["nn_s"] for r in rows], "^-", label=f"nearest_neighbours, {batch} queries")
        ax.plot(
            sizes,
            [eval_queries / r["eval_s"] for r in rows],
            "v-",
            label=f"evaluation, {repeats} dictionaries",
        )

    floor = 0.1  # MB: a log axis cannot show 0 (no measurable growth)
    title = "Memory of pose lookup against dictionary size"
    with log_log_axes(path_memory, xlabel, "peak MB added by a call", title, legend_size=7) as ax:
        ax.plot(
            sizes, [max(r["export_1_mb"], floor) for r in rows], "o-", label="lookup_pose, 1 image per call"
        )
        ax.plot(
            sizes,
            [max(r[f"export_{batch}_mb"], floor) for r in rows],
            "s-",
            label=f"lookup_pose, {batch} per call",
        )
        ax.plot(
            sizes, [max(r["nn_mb"], floor) for r in rows], "^-", label=f"nearest_neighbours, {batch} queries"
        )
        ax.plot(
            sizes,
            [max(r["eval_mb"], floor) for r in rows],
            "v-",
            label=f"evaluation, {repeats} dictionaries (chunked)",
        )
        ax.plot(
            sizes,
            [r["old_eval_mb"] for r in rows],
            "k--",
            label="evaluation before: whole matrices (computed)",
        )
        ax.plot(sizes, [r["pool_mb"] for r in rows], ":", color="grey", label="the pool's embeddings (input)")


def serving_limit(rows: list[dict], limit_s: float = SERVING_LIMIT_S) -> tuple[float | None, dict, dict]:
    """Where one image per call passes ``limit_s``, by the line through two measured sizes.
    They are the first size that passes it and the one before, or else the two largest. Returns the
    N (None with fewer than two sizes, or no growth between them) and the two rows."""
    ordered = sorted(rows, key=lambda r: r["size"])
    passing = [i for i, r in enumerate(ordered) if r["export_1_s"] > limit_s]
    upper = max(1, passing[0] if passing else len(ordered) - 1)
    if len(ordered) < 2:
        return None, ordered[0], ordered[-1]
    low, high = ordered[upper - 1], ordered[upper]
    slope = (high["export_1_s"] - low["export_1_s"]) / (high["size"] - low["size"])
    if slope <= 0:
        return None, low, high
    return low["size"] + (limit_s - low["export_1_s"]) / slope, low, high


def _serving_text(results: dict) -> str:
    """The sentence on where serving one image at a time by brute force passes the latency limit."""
    limit_s = results["serving_limit_s"]
    size, low, high = serving_limit(results["rows"], limit_s)
    if size is None:
        return (
            f"Too few sizes, or no growth between them, to place where a call passes {1000 * limit_s:.0f} ms."
        )
    keys = f"{float(f'{size:.2g}'):,.0f} keys"
    between = f"N = {low['size']:,} and N = {high['size']:,}"
    if high["export_1_s"] > limit_s:
        return f"**One image a call passes {1000 * limit_s:.0f} ms at about {keys}**."
    return (
        f"One image a call stays under {1000 * limit_s:.0f} ms at every size; extrapolated from {between}, "
        f"**it would pass {1000 * limit_s:.0f} ms at about {keys}**."
    )


def section(results: dict) -> str:
    """The section of BENCHMARKS.md, from the results file alone."""
    rows = sorted(results["rows"], key=lambda r: r["size"])
    dim, similarity, batch = results["dim"], results["similarity"], results["batch"]
    eval_queries, repeats = results["eval_queries"], results["repeats"]
    lines = [
        f"Exact search of random d={dim} keys ({similarity}): the `lookup_pose` SavedModel, and "
        f"`lookup_evaluation` ({eval_queries} queries, {repeats} dictionaries; MB: its peak).",
        "",
        f"| dictionary N | 1 image: ms/call | {batch} images: queries/s | evaluation: s | MB |",
        "|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['size']:,} | {1000 * r['export_1_s']:.2f} | {batch / r[f'export_{batch}_s']:,.0f} | "
            f"{r['eval_s']:.2f} | {r['eval_mb']:.0f} |"
        )
    paper = results["paper_dictionary"]
    lines += [
        "",
        f"`{results['command']}`, {report.host(results)}",
        "",
        f"{_serving_text(results)} The paper's dictionaries hold {paper:,} renders, so no approximate "
        "search is added.",
        "",
        "![queries/s](docs/figures/benchmarks/lookup_scaling_rate.png) "
        "![memory](docs/figures/benchmarks/lookup_scaling_memory.png)",
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argument_parser(__doc__)
    parser.add_argument(
        "--sizes", default="1000,10000,100000,1000000", help="Dictionary sizes, comma separated."
    )
    parser.add_argument("--seconds", type=float, default=1.0, help="Timing window of each rate.")
    parser.add_argument("--export_memory", default="", help=argparse.SUPPRESS)  # internal: one memory probe
    args = parser.parse_args()
    if args.export_memory:
        export_memory(args.export_memory)
        return

    preset = get_preset("pose_lookup_car")
    dim, similarity = preset.encoder.embedding_dim, preset.method.similarity
    load_start = os.getloadavg()[0]
    rows = [measure(int(size), dim, similarity, args.seconds) for size in args.sizes.split(",")]
    results = {
        "sizes": args.sizes,
        "rows": rows,
        "dim": dim,
        "similarity": similarity,
        "batch": BATCH,
        "eval_queries": EVAL_QUERIES,
        "repeats": REPEATS,
        "pool_factor": POOL_FACTOR,
        "tile_queries": lookup.QUERIES_PER_TILE,
        "tile_scores": lookup.MAX_SCORES,
        "paper_dictionary": pose_accuracy.PoseEvalSettings().dictionary_size,
        "serving_limit_s": SERVING_LIMIT_S,
        **measured(load_start),
    }
    seconds = "" if args.seconds == 1.0 else f" --seconds {args.seconds:g}"
    results["command"] = f"python -m benchmarks.lookup_scaling --sizes {args.sizes}{seconds}"
    paths = [os.path.join(FIGURES, f"lookup_scaling_{name}.png") for name in ("rate", "memory")]
    publish(TITLE, section(results), not args.no_write, lambda: plot(results, *paths))
    if not args.no_write:
        save_results("lookup_scaling", results)


if __name__ == "__main__":
    main()
