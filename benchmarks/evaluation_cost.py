"""Evaluation cost: MINE, factor probes and histogram MI against sample count and embedding size.

It tells users what a full paper-setting evaluation costs before they start one. The inputs are
random embeddings [N, D] and six factors with the value counts of 3dshapes, the factors of
``evaluate.py`` on Shapes3D. What is timed is the estimators' own work, which does not depend on the values.

- MINE: ``MineEstimator``, six networks trained together. Seconds per 1000 optimizer steps come from
  the difference of two estimates, of 50 and 50 + ``--mine_steps`` steps, on one warm estimator.
  Each is the fastest of 3. The rest of an estimate is the final Donsker-Varadhan average over
  ``eval_samples`` = N samples. The paper's 20,000 steps are not run but extrapolated from these few hundred.
- probes: ``probe_accuracies``, six probes trained together in one compiled call. The first call's
  tracing is timed. Seconds per epoch come from warm runs of 1 and of E epochs, E x N about 1.3
  million samples, and are extrapolated to the default 30.
- histogram MI: ``histogram_mutual_information``, for D <= 3 only. One estimate is timed.

Writes docs/figures/benchmarks/evaluation_cost.json, its three figures and the section of
BENCHMARKS.md, all from that file's results.

  python -m benchmarks.evaluation_cost [--mine_steps 300] [--no_write]
"""

from __future__ import annotations

import dataclasses
import math
import os
import time

import numpy as np

from abc_tf.data.shapes3d.family import FACTOR_SIZES
from abc_tf.evaluation.estimators import histogram_mi, mine, noise, probes
from benchmarks import report
from benchmarks.report import (
    FIGURES,
    argument_parser,
    log_log_axes,
    measured,
    publish,
    save_results,
)

TITLE = "Evaluation cost against sample count and embedding size"
FILE = "docs/figures/benchmarks/evaluation_cost.json"
SAMPLES = (16_384, 65_536, 262_144)
DIMS = (8, 64, 256)
HISTOGRAM_SAMPLES = (16_384, 65_536, 262_144, 1_048_576)
HISTOGRAM_DIMS = (1, 2, 3)
FIRST_STEPS = 50
PROBE_SAMPLES = 5 * 262_144  # samples of the longer probe run (5 epochs at the largest N)
REPEATS = 3  # MINE timings, the fastest kept
SIGMA = 0.1
SUPER_LINEAR = 1.5  # growth of a cost per sample over the range of N taken as faster than linear


def data(num: int, dim: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(num + dim)
    return rng.normal(size=(num, dim)), rng.integers(0, FACTOR_SIZES, size=(num, len(FACTOR_SIZES)))


def clocks() -> np.ndarray:
    """A pair: wall seconds, and CPU seconds of this process over all its threads.
    When other jobs take the shared cores, the wall time moves but the CPU time hardly does."""
    return np.array([time.perf_counter(), time.process_time()])


def mine_cost(num: int, dim: int, steps: int) -> dict:
    """Seconds per 1000 steps, and seconds of the rest of one estimate: the final average and resets."""
    embeddings, factors = data(num, dim)
    settings = mine.MineSettings(steps=FIRST_STEPS, eval_samples=num)
    start = time.perf_counter()
    estimator = mine.MineEstimator(num, dim, factors.shape[1], settings)
    estimator.set_data(embeddings, factors)
    estimator.estimate(SIGMA, seed=0)  # traces the training and evaluation loops
    setup = time.perf_counter() - start
    times = {FIRST_STEPS: [], FIRST_STEPS + steps: []}
    for _ in range(REPEATS):  # alternated, and the fastest of each kept: the machine is shared
        for total in times:
            estimator.settings = dataclasses.replace(settings, steps=total)
            start = clocks()
            estimator.estimate(SIGMA, seed=1)
            times[total].append(clocks() - start)
    short, long = (np.min(values, axis=0) for values in times.values())
    per_step = (long - short) / steps  # [wall, cpu]
    rest = np.maximum(short - FIRST_STEPS * per_step, 0.0)
    paper = mine.PAPER_STEPS * per_step + rest * mine.PAPER_EVAL_SAMPLES / num
    return {
        "n": num,
        "d": dim,
        "per_1k": 1000 * per_step[0],
        "per_1k_cpu": 1000 * per_step[1],
        "rest": rest[0],
        "setup": setup,
        "paper": paper[0],
        "paper_cpu": paper[1],
    }


def probe_cost(num: int, dim: int) -> dict:
    embeddings, factors = data(num, dim)

    def run(epochs: int) -> np.ndarray:
        start = clocks()
        probes.probe_accuracies(
            embeddings, factors, SIGMA, num_classes=FACTOR_SIZES, settings=probes.ProbeSettings(epochs=epochs)
        )
        return clocks() - start

    # The first call of a process builds and traces the compiled loop (probes.probe_trainer); later
    # calls for probes of the same shape reuse it. Then 1 epoch and enough epochs for about
    # PROBE_SAMPLES samples, so that their difference is well above the per-call seconds at every N.
    probes.probe_trainer.cache_clear()
    first = run(1)
    counts = (1, max(5, round(PROBE_SAMPLES / num)))
    times = [run(epochs) for epochs in counts]
    per_epoch = (times[1] - times[0]) / (counts[1] - counts[0])  # [wall, cpu]
    fixed = np.maximum(
        times[0] - per_epoch, 0.0
    )  # every call: the probes' start, the split, the test predictions
    tracing = np.maximum(first - times[0], 0.0)  # once per process and shape
    full = tracing + fixed + probes.ProbeSettings().epochs * per_epoch  # a first call at the default epochs
    return {
        "n": num,
        "d": dim,
        "epochs": counts[1],
        "per_epoch": per_epoch[0],
        "per_epoch_cpu": per_epoch[1],
        "fixed": fixed[0],
        "tracing": tracing[0],
        "full": full[0],
        "full_cpu": full[1],
    }


def histogram_cost(num: int, dim: int) -> dict:
    embeddings, factors = data(num, dim)
    histogram_mi.histogram_mutual_information(embeddings[:1000], factors[:1000])  # warm up
    start = time.perf_counter()
    histogram_mi.histogram_mutual_information(embeddings, factors)
    return {"n": num, "d": dim, "seconds": time.perf_counter() - start}


def _plot(rows: list[dict], curves: list[tuple[str, str, str]], ylabel: str, title: str, path: str) -> None:
    """One line per embedding size D for each row key, line style and label triple in ``curves``."""
    dims = sorted({r["d"] for r in rows})
    with log_log_axes(path, "samples N", ylabel, title, legend_size=7) as ax:
        for key, style, label in curves:
            for index, dim in enumerate(dims):
                chosen = [r for r in rows if r["d"] == dim]
                ax.plot(
                    [r["n"] for r in chosen],
                    [max(r[key], 1e-4) for r in chosen],
                    style,
                    color=f"C{index}",
                    label=f"{label}, D = {dim}",
                )


def _words(values) -> str:
    """``8, 64 and 256``."""
    values = [str(v) for v in values]
    return values[0] if len(values) == 1 else ", ".join(values[:-1]) + " and " + values[-1]


def _growth(rows: list[dict], key: str) -> tuple[float, float, float]:
    """How ``key`` grows from the smallest N to the largest: the least and the most growth over
    the embedding sizes D, and the most growth per sample (the growth over the growth of N).
    All three are NaN where no D has a positive cost at the smallest N (a timing lost in noise)."""
    low, high = min(r["n"] for r in rows), max(r["n"] for r in rows)
    at = {(r["n"], r["d"]): r[key] for r in rows}
    ratios = [at[high, d] / at[low, d] for d in sorted({r["d"] for r in rows}) if at[low, d] > 0]
    if not ratios:
        return math.nan, math.nan, math.nan
    return min(ratios), max(ratios), max(ratios) / (high / low)


def section(results: dict) -> str:
    """The section of BENCHMARKS.md, from the results file alone."""
    mine_rows, probe_rows, histogram_rows = results["mine"], results["probes"], results["histogram"]
    dims = sorted({r["d"] for r in mine_rows})
    shown = (dims[0], dims[-1])  # the table shows the smallest and largest D; the figures all of them
    sweep, epochs = results["num_sigmas"], results["probe_epochs"]
    probes = {(r["n"], r["d"]): r for r in probe_rows}
    lines = [
        f"Wall time on random [N, D] embeddings: one MINE estimate at the paper's {results['paper_steps']:,} "
        f"steps and its {sweep}-sigma sweep (extrapolated), and a first probe call.",
        "",
        f"| N | D | MINE, paper setting: min | {sweep}-sigma sweep: h | probes, {epochs} epochs: s |",
        "|---|---|---|---|---|",
    ]
    ends = (min(r["n"] for r in mine_rows), max(r["n"] for r in mine_rows))
    for r in mine_rows:
        if r["d"] in shown and r["n"] in ends:
            probe = probes.get((r["n"], r["d"]))
            cells = f"{probe['full']:.0f}" if probe else "-"
            lines.append(
                f"| {r['n']:,} | {r['d']} | {r['paper'] / 60:.1f} | "
                f"{sweep * r['paper'] / 3600:.1f} | {cells} |"
            )
    rest_per_sample = _growth(mine_rows, "rest")[2]
    epoch_per_sample = _growth(probe_rows, "per_epoch_cpu")[2]
    histogram_per_sample = _growth(histogram_rows, "seconds")[2]
    per_sample = {
        "MINE's final average": rest_per_sample,
        "a probe epoch": epoch_per_sample,
        "histogram MI": histogram_per_sample,
    }
    steep = [name for name, ratio in per_sample.items() if ratio > SUPER_LINEAR]
    if steep:
        verdict = f"{_words(steep)} grow{'s' if len(steep) == 1 else ''} faster than linearly."
        verdict = verdict[0].upper() + verdict[1:]
    elif all(math.isfinite(ratio) for ratio in per_sample.values()):
        verdict = "No cost grows faster than N log N."
    else:
        verdict = "Some costs were lost in the noise of this run."
    lines += [
        "",
        f"`{results['command']}`, {report.host(results)}",
        "",
        f"A MINE step's cost does not depend on N. {verdict}",
        "",
        "![MINE](docs/figures/benchmarks/evaluation_cost_mine.png) "
        "![probes](docs/figures/benchmarks/evaluation_cost_probes.png) "
        "![histogram MI](docs/figures/benchmarks/evaluation_cost_histogram.png)",
    ]
    return "\n".join(lines)


def draw(results: dict) -> None:
    """The three figures, from the results alone."""
    _plot(
        results["mine"],
        [
            ("per_1k_cpu", "o-", "CPU s / 1000 steps"),
            ("per_1k", "o:", "wall s / 1000 steps"),
            ("rest", "s--", "rest of an estimate, wall s"),
        ],
        "seconds",
        "MINE cost (6 networks)",
        os.path.join(FIGURES, "evaluation_cost_mine.png"),
    )
    _plot(
        results["probes"],
        [("per_epoch_cpu", "o-", "CPU s / epoch"), ("per_epoch", "o:", "wall s / epoch")],
        "seconds per probe epoch",
        "Probe training cost (6 probes)",
        os.path.join(FIGURES, "evaluation_cost_probes.png"),
    )
    _plot(
        results["histogram"],
        [("seconds", "o-", "wall s")],
        "seconds per estimate",
        "Histogram MI cost (6 factors)",
        os.path.join(FIGURES, "evaluation_cost_histogram.png"),
    )


def main() -> None:
    parser = argument_parser(__doc__)
    parser.add_argument(
        "--mine_steps", type=int, default=300, help="MINE steps timed per setting (after 50)."
    )
    args = parser.parse_args()

    load_start = os.getloadavg()[0]
    start = time.perf_counter()
    mine_rows = []
    for num in SAMPLES:
        for dim in DIMS:
            mine_rows.append(mine_cost(num, dim, args.mine_steps))
            print(mine_rows[-1], flush=True)
    probe_rows = []
    for num in SAMPLES:
        for dim in DIMS:
            probe_rows.append(probe_cost(num, dim))
            print(probe_rows[-1], flush=True)
    histogram_rows = []
    for num in HISTOGRAM_SAMPLES:
        for dim in HISTOGRAM_DIMS:
            histogram_rows.append(histogram_cost(num, dim))
            print(histogram_rows[-1], flush=True)
    total = time.perf_counter() - start

    probe_settings = probes.ProbeSettings()
    results = {
        "mine_steps": args.mine_steps,
        "mine": mine_rows,
        "probes": probe_rows,
        "histogram": histogram_rows,
        "total_seconds": total,
        "factor_sizes": FACTOR_SIZES,
        "sigma": SIGMA,
        "first_steps": FIRST_STEPS,
        "repeats": REPEATS,
        "mine_batch": mine.PAPER_BATCH_SIZE,
        "paper_steps": mine.PAPER_STEPS,
        "paper_eval_samples": mine.PAPER_EVAL_SAMPLES,
        "num_sigmas": noise.PAPER_NUM_SIGMAS,
        "probe_batch": probe_settings.batch_size,
        "probe_epochs": probe_settings.epochs,
        "probe_test_fraction": probe_settings.test_fraction,
        "probe_samples": PROBE_SAMPLES,
        **measured(load_start),
        "command": f"python -m benchmarks.evaluation_cost --mine_steps {args.mine_steps}",
    }
    publish(TITLE, section(results), not args.no_write, lambda: draw(results))
    if not args.no_write:
        save_results("evaluation_cost", results)


if __name__ == "__main__":
    main()
