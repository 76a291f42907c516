"""How training cost grows with set size N and pairs per step P, and fit against a bare loop.

All runs share one process and use random uint8 sets and embeddings, with no data pipeline. They
are compiled, and float32 unless named:

- the whole step, ``AbcModel.fit`` from memory, for the Shapes3D model, S3 with d=64, and the MNIST
  model, S4 with d=8. It runs in float32 and mixed precision, over N in 32..1024 at P=1 and over
  P in 1, 4, 16.
- its two parts apart: the encoder's forward and backward per image, and the ABC loss's forward
  and backward on [P, N, d] embeddings for every similarity. The loss always runs in float32, so
  precision changes only the encoder's part.
- peak memory of each, from TensorFlow's CPU allocator, reset before each measurement.
- l1 with the [P, N, M, d] difference tensor built whole, next to the chunked form, to show what
  the chunks save.
- ``AbcModel.fit`` against a plain ``tf.function`` loop on the same model and batch, in float32.
  They run in interleaved rounds, and the medians give fit / bare time per step.

  python -m benchmarks.training_scaling [--quick] [--no_write]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time

import keras
import numpy as np
import tensorflow as tf

import models
from abc_tf import losses
from abc_tf.config import SIMILARITIES
from benchmarks import loops, report
from benchmarks.report import machine_line, measured, write_section

FIGURES = os.path.join(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "docs", "figures", "benchmarks"
)
# label: (model, image shape, embedding size, most images a timed whole step may have). The caps
# keep a step near 4 GB (S3 needs about 4.4 MB an image in float32) and tens of seconds on 2 cores.
MODELS = {
    "shapes3d (S3, d=64)": ("s3", (64, 64, 3), 64, 1024),
    "mnist (S4, d=8)": ("s4", (28, 28, 1), 8, 4096),
}
SET_SIZES = (32, 64, 128, 256, 512, 1024)
PAIRS = (1, 4, 16)
MAX_COORDINATE_WORK = 2**28  # P*N*M*d of l1/linf timed (their cost is linear in it)
MIXED = "mixed_bfloat16"
FILE = "docs/figures/benchmarks/training_scaling.json"


def peak_mb_of(run) -> tuple[float, float]:
    """A pair: seconds per call, and the peak MB that ``run()`` adds to TensorFlow's CPU allocator.
    Both are taken after one warm-up call."""
    run()
    tf.config.experimental.reset_memory_stats("CPU:0")
    baseline = tf.config.experimental.get_memory_info("CPU:0")["current"]
    calls, start = 0, time.perf_counter()
    while calls < 2 or (calls < 10 and time.perf_counter() - start < 2.0):
        run()
        calls += 1
    seconds = (time.perf_counter() - start) / calls
    return seconds, (tf.config.experimental.get_memory_info("CPU:0")["peak"] - baseline) / 2**20


def loss_cost(similarity: str, pairs: int, size: int, dim: int) -> tuple[float, float]:
    rng = np.random.default_rng(0)
    set_a, set_b = (tf.constant(rng.normal(size=(pairs, size, dim)), tf.float32) for _ in range(2))

    @tf.function
    def step():
        with tf.GradientTape() as tape:
            tape.watch([set_a, set_b])
            loss, _ = losses.abc_loss(set_a, set_b, similarity, 1.0)
        return tape.gradient(loss, [set_a, set_b])[0][0, 0, 0]

    return peak_mb_of(lambda: step().numpy())


def encoder_cost(model: str, shape: tuple, dim: int, images: int, policy: str) -> tuple[float, float]:
    keras.mixed_precision.set_global_policy(policy)
    encoder = models.build(model, embedding_dim=dim, input_shape=shape)
    keras.mixed_precision.set_global_policy("float32")
    batch = tf.constant(np.random.default_rng(0).random((images,) + shape, dtype=np.float32))

    @tf.function
    def step():
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(tf.cast(encoder(batch, training=True), tf.float32))
        return tape.gradient(loss, encoder.trainable_variables)[0][0]

    return peak_mb_of(lambda: step().numpy())


def step_cost(model: str, shape: tuple, dim: int, pairs: int, size: int, policy: str) -> tuple[float, float]:
    rng = np.random.default_rng(0)
    batch = {
        key: rng.integers(0, 256, size=(pairs, size) + shape, dtype=np.uint8) for key in ("set_a", "set_b")
    }
    steps = 2 if 2 * pairs * size > 512 else 5
    run = loops.fit_runner(
        lambda: models.build(model, embedding_dim=dim, input_shape=shape), batch, policy=policy
    )
    tf.config.experimental.reset_memory_stats("CPU:0")
    baseline = tf.config.experimental.get_memory_info("CPU:0")["current"]
    rate = run(steps)
    return 1 / rate, (tf.config.experimental.get_memory_info("CPU:0")["peak"] - baseline) / 2**20


def fit_against_bare(model: str, shape: tuple, dim: int, size: int, steps: int, rounds: int) -> dict:
    """Median steps/s and CPU milliseconds per step of fit and of the bare loop.
    They are timed in turn, round after round. CPU time counts all threads of the process. It is the
    steadier measure on a shared machine: another job's load slows the wall clock of both, but not the
    work each one does."""
    rng = np.random.default_rng(0)
    batch = {key: rng.integers(0, 256, size=(1, size) + shape, dtype=np.uint8) for key in ("set_a", "set_b")}
    build = lambda: models.build(model, embedding_dim=dim, input_shape=shape)  # noqa: E731
    runners = {"bare": loops.bare_runner(build, batch), "fit": loops.fit_runner(build, batch)}
    rates, cpu_ms = {name: [] for name in runners}, {name: [] for name in runners}
    for _ in range(rounds):
        for name, run in runners.items():
            start = time.process_time()
            rates[name].append(run(steps))
            cpu_ms[name].append(1e3 * (time.process_time() - start) / steps)
    return {
        name: {"steps_per_s": statistics.median(rates[name]), "cpu_ms": statistics.median(cpu_ms[name])}
        for name in runners
    }


def measure(quick: bool) -> dict:
    sizes = SET_SIZES[:3] if quick else SET_SIZES
    pairs_grid = PAIRS[:2] if quick else PAIRS
    results = {"steps": [], "encoder": [], "loss": [], "whole_l1": [], "fit_vs_bare": {}}
    for label, (model, shape, dim, max_images) in MODELS.items():
        grid = [(1, n) for n in sizes] + [(p, n) for p in pairs_grid[1:] for n in (32, 128)]
        for policy in ("float32", MIXED):
            for pairs, size in sorted(grid, key=lambda pn: pn[0] * pn[1]):
                if 2 * pairs * size > max_images:
                    continue
                seconds, peak = step_cost(model, shape, dim, pairs, size, policy)
                results["steps"].append(
                    dict(model=label, policy=policy, pairs=pairs, size=size, seconds=seconds, peak_mb=peak)
                )
                print(results["steps"][-1], flush=True)
            for images in sorted({64, 256, 1024} | ({4096} if not quick and model == "s4" else set())):
                seconds, peak = encoder_cost(model, shape, dim, images, policy)
                results["encoder"].append(
                    dict(model=label, policy=policy, images=images, seconds=seconds, peak_mb=peak)
                )
                print(results["encoder"][-1], flush=True)
    for dim in sorted({dim for _, _, dim, _ in MODELS.values()}):
        for similarity in SIMILARITIES:
            for pairs in pairs_grid:
                for size in sizes:
                    if similarity in ("l1", "linf") and pairs * size * size * dim > MAX_COORDINATE_WORK:
                        continue
                    seconds, peak = loss_cost(similarity, pairs, size, dim)
                    results["loss"].append(
                        dict(
                            similarity=similarity,
                            dim=dim,
                            pairs=pairs,
                            size=size,
                            seconds=seconds,
                            peak_mb=peak,
                        )
                    )
                    print(results["loss"][-1], flush=True)
    # What the chunks save: l1 with the difference tensor built whole, as before.
    chunked_limit = losses.DIFFERENCE_ELEMENTS
    losses.DIFFERENCE_ELEMENTS = 2**62
    for size in sizes[-4:-1]:  # 1024 would need about 8 GB
        seconds, peak = loss_cost("l1", 4, size, 64)
        results["whole_l1"].append(dict(pairs=4, size=size, dim=64, seconds=seconds, peak_mb=peak))
    losses.DIFFERENCE_ELEMENTS = chunked_limit
    for label, (model, shape, dim, _) in MODELS.items():
        size = 64 if model == "s4" else 32  # the presets' set sizes
        results["fit_vs_bare"][label] = fit_against_bare(
            model, shape, dim, size, 10 if quick else 30, 3 if quick else 7
        )
        print(label, results["fit_vs_bare"][label], flush=True)
    return results


def plot(results: dict) -> list[str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    os.makedirs(FIGURES, exist_ok=True)
    paths = []
    figure, axis = plt.subplots(figsize=(6, 4))
    for label in MODELS:
        for policy, style in (("float32", "-o"), (MIXED, "--s")):
            rows = sorted(
                (2 * r["pairs"] * r["size"], r["seconds"])
                for r in results["steps"]
                if r["model"] == label and r["policy"] == policy
            )
            axis.loglog(*zip(*rows), style, label=f"{label}, {policy}")
    axis.set(
        xlabel="images per step (2 P N)",
        ylabel="seconds per step",
        title="AbcModel.fit step against batch size",
    )
    axis.legend(fontsize=7)
    paths.append(os.path.join(FIGURES, "training_step_scaling.png"))
    figure.tight_layout(), figure.savefig(paths[-1], dpi=110), plt.close(figure)

    for quantity, name, ylabel in (
        ("seconds", "loss_time_scaling.png", "seconds (forward + backward)"),
        ("peak_mb", "loss_memory_scaling.png", "peak MB"),
    ):
        figure, axis = plt.subplots(figsize=(6, 4))
        for similarity in SIMILARITIES:
            rows = sorted(
                (r["size"], r[quantity])
                for r in results["loss"]
                if r["similarity"] == similarity and r["dim"] == 64 and r["pairs"] == 1
            )
            axis.loglog(*zip(*rows), "-o", label=f"{similarity}, P=1")
        if quantity == "peak_mb":
            rows = sorted((r["size"], r["peak_mb"]) for r in results["whole_l1"])
            axis.loglog(*zip(*rows), ":x", color="black", label="l1, P=4, whole [P,N,M,d] tensor")
            rows = sorted(
                (r["size"], r["peak_mb"])
                for r in results["loss"]
                if r["similarity"] == "l1" and r["dim"] == 64 and r["pairs"] == 4
            )
            axis.loglog(*zip(*rows), "-x", color="black", label="l1, P=4, chunked")
        else:
            rows = sorted(
                (r["images"] // 2, r["seconds"])
                for r in results["encoder"]
                if r["model"].startswith("shapes3d") and r["policy"] == "float32"
            )
            axis.loglog(*zip(*rows), "k--", label="S3 encoder, 2N images, float32")
        axis.set(xlabel="set size N (= M)", ylabel=ylabel, title=f"ABC loss, d=64: {ylabel}")
        axis.legend(fontsize=7)
        paths.append(os.path.join(FIGURES, name))
        figure.tight_layout(), figure.savefig(paths[-1], dpi=110), plt.close(figure)
    return paths


SHOWN_IMAGES = 1024  # the whole-step rows the section shows: this many images a step, split three ways
SHOWN_LOSS = ((1, 32), (1, 256), (1, 1024), (16, 1024))  # the (P, N) of the loss rows it shows


def encoder_rates(results: dict) -> dict[str, float]:
    """{model: its encoder's largest float32 rate, images/s}: what the loss's share is taken against."""
    return {
        model: max(
            r["images"] / r["seconds"]
            for r in results["encoder"]
            if r["model"] == model and r["policy"] == "float32"
        )
        for model in MODELS
    }


def loss_share(row: dict, rate: float) -> float:
    """The loss's share of a float32 step: loss / (loss + the encoder's time for the step's 2PN images)."""
    return row["seconds"] / (row["seconds"] + 2 * row["pairs"] * row["size"] / rate)


def section(results: dict) -> str:
    """The "Training cost against set size and pairs (CPU)" section, from the results file alone."""
    splits = sorted(
        {(r["pairs"], r["size"]) for r in results["steps"] if 2 * r["pairs"] * r["size"] == SHOWN_IMAGES}
    )
    splits = [splits[0], splits[-1]]  # the extremes; the others in the JSON
    steps = {(r["model"], r["policy"], r["pairs"], r["size"]): r["seconds"] for r in results["steps"]}
    lines = [
        f"Seconds a float32 `fit` step at {SHOWN_IMAGES:,} images in P pairs of sets of N; the ABC loss "
        "alone in ms (share of a step).",
        "",
        "| model | " + " | ".join(f"P={pairs},N={size}" for pairs, size in splits) + " |",
        "|---|" + "---|" * len(splits),
    ]
    for model in MODELS:  # float32; mixed precision: the JSON
        cells = [steps.get((model, "float32", pairs, size)) for pairs, size in splits]
        lines.append(
            f"| {model.split(' ')[0]} | "
            + " | ".join("-" if cell is None else f"{cell:.3f}" for cell in cells)
            + " |"
        )
    rates = encoder_rates(results)
    shown = ("l2sq", "l1", "linf")  # l2 and cosine cost as l2sq does: the JSON
    lines += ["", "| d | P,N | " + " | ".join(shown) + " |", "|---" * (len(shown) + 2) + "|"]
    for label, (_, _, dim, _) in MODELS.items():
        rows = {(r["similarity"], r["pairs"], r["size"]): r for r in results["loss"] if r["dim"] == dim}
        for pairs, size in SHOWN_LOSS[2:]:
            if rows.get(("l1", pairs, size)) is None:  # l2sq alone: the JSON
                continue
            cells = [
                f"{1e3 * row['seconds']:.1f} ({loss_share(row, rates[label]):.0%})" if row else "-"
                for row in (rows.get((similarity, pairs, size)) for similarity in shown)
            ]
            lines.append(f"| {dim} | {pairs},{size} | " + " | ".join(cells) + " |")
    lines += [
        "",
        f"`{results['command']}`, {report.host(results)}",
        "",
        *reading(results),
        "",
        "![step](docs/figures/benchmarks/training_step_scaling.png) "
        "![loss time](docs/figures/benchmarks/loss_time_scaling.png) "
        "![loss memory](docs/figures/benchmarks/loss_memory_scaling.png)",
    ]
    return "\n".join(lines)


def _span(values: list[float]) -> str:
    """``1.24x``, or ``0.98-1.24x`` where the values differ at two decimals."""
    low, high = f"{min(values):.2f}", f"{max(values):.2f}"
    return f"{low}x" if low == high else f"{low}-{high}x"


def reading(results: dict) -> list[str]:
    """The findings, computed from the rows: how the split of a step's images moves its time, where the
    loss starts to matter next to the encoder, and what the chunked l1 saves."""
    rows = {(r["model"], r["policy"], r["pairs"], r["size"]): r["seconds"] for r in results["steps"]}
    ratios = [
        rows[(model, policy, 1, 512)] / rows[(model, policy, 16, 32)]
        for model in MODELS
        for policy in ("float32", MIXED)
        if (model, policy, 1, 512) in rows and (model, policy, 16, 32) in rows  # not in a --quick run
    ]
    rates = encoder_rates(results)
    dims = {dim: model for model, (_, _, dim, _) in MODELS.items()}
    share = max(
        loss_share(r, rates[dims[r["dim"]]])
        for r in results["loss"]
        if r["similarity"] in ("l1", "linf") and r["dim"] in dims
    )
    whole = {r["size"]: r for r in results["whole_l1"]}
    chunked = {
        r["size"]: r for r in results["loss"] if (r["similarity"], r["pairs"], r["dim"]) == ("l1", 4, 64)
    }
    common = max(set(whole) & set(chunked))
    split = f"One pair of 512 costs {_span(ratios)} the time of 16 pairs of 32. " if ratios else ""
    return [
        f"{split}Only l1 and linf, with no matmul form, reach {share:.0%} of a step; chunked l1 holds "
        f"{chunked[common]['peak_mb']:,.0f} MB where whole takes {whole[common]['peak_mb']:,.0f} "
        f"(P=4, N={common})."
    ]


def fit_section(results: dict) -> str:
    """The "Fit against a bare compiled step (CPU)" section, from the results file alone."""
    lines = [
        "CPU ms a step (all threads) of `fit` and of a bare `tf.function` step, interleaved rounds. "
        "Goal: fit / bare <= 1.10.",
        "",
        "| model | bare | fit | fit / bare |",
        "|---|---|---|---|",
    ]
    for label, runs in results["fit_vs_bare"].items():
        bare, fit = runs["bare"], runs["fit"]
        lines.append(
            f"| {label} | {bare['cpu_ms']:.1f} | {fit['cpu_ms']:.1f} | {fit['cpu_ms'] / bare['cpu_ms']:.3f} |"
        )
    lines += [
        "",
        f"`{results['command']}`, {report.host(results)}",
    ]
    return "\n".join(lines)


TITLE = "Training cost against set size and pairs (CPU)"
FIT_TITLE = "Fit against a bare compiled step (CPU)"
SECTIONS = {TITLE: section, FIT_TITLE: fit_section}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="Small grid (to check the script).")
    parser.add_argument(
        "--from_json", default="", help="Rewrite the sections and figures from a saved run's JSON."
    )
    parser.add_argument("--only_fit", action="store_true", help="Measure only fit against the bare loop.")
    parser.add_argument("--no_write", action="store_true")
    args = parser.parse_args()
    if args.only_fit:
        results = {
            "fit_vs_bare": {
                label: fit_against_bare(model, shape, dim, 64 if model == "s4" else 32, 30, 9)
                for label, (model, shape, dim, _) in MODELS.items()
            },
            "machine": machine_line(),
            "command": "python -m benchmarks.training_scaling --only_fit",
        }
        body = fit_section(results)
        print(body)
        if not args.no_write:
            write_section(FIT_TITLE, body)
        return
    if args.from_json:
        with open(args.from_json) as handle:
            results = json.load(handle)
    else:
        start_load = os.getloadavg()[0]
        results = measure(args.quick)
        results.update(measured(start_load))
        results["command"] = "python -m benchmarks.training_scaling" + (" --quick" if args.quick else "")
    bodies = {title: write(results) for title, write in SECTIONS.items()}
    print(*bodies.values(), sep="\n\n")
    if not args.no_write:
        plot(results)
        with open(os.path.join(FIGURES, "training_scaling.json"), "w") as handle:
            json.dump(results, handle, indent=1)
        for title, body in bodies.items():
            write_section(title, body)


if __name__ == "__main__":
    main()
