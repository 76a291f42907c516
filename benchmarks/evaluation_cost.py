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
from benchmarks.report import (
    FIGURES,
    argument_parser,
    load_text,
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
    shown = (dims[0], dims[-1])  # the tables show the smallest and largest D; the figures all of them
    unshown = [d for d in dims if d not in shown]
    sweep, epochs = results["num_sigmas"], results["probe_epochs"]
    samples = sorted({r["n"] for r in mine_rows})
    smallest, largest = samples[0], samples[-1]
    lines = [
        results["machine"],
        "",
        f"Random embeddings [N, D] (D = {_words(dims)}; the tables show {_words(sorted(set(shown)))}) with "
        f"the six factors of Shapes3D (value counts {tuple(results['factor_sizes'])}); noise sigma "
        f"{results['sigma']}.",
        "",
        f"**MINE** (six statistics networks trained together, batch {results['mine_batch']}, "
        f"`eval_samples` = N). Seconds per 1000 steps: from estimates of {results['first_steps']} and "
        f"{results['first_steps'] + results['mine_steps']} steps, the fastest of {results['repeats']} of "
        "each. 'rest': the remainder of an estimate (the final Donsker-Varadhan average over N samples). "
        f"The paper columns are **extrapolated**: {results['paper_steps']:,} steps at the measured rate "
        f"plus the rest scaled to {results['paper_eval_samples']:,} samples, for one sigma, and {sweep} "
        "sigmas (the paper's sweep). CPU seconds (all threads) hardly depend on the other jobs and bound an "
        "idle machine's wall time from above.",
        "",
        "| N | D | wall s per 1000 steps | CPU s per 1000 steps | rest of an estimate, wall s | "
        "first estimate (build + trace), wall s | paper setting, one sigma (extrapolated): wall minutes | "
        f"CPU minutes | {sweep}-sigma sweep (extrapolated): wall h |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in mine_rows:
        if r["d"] in shown:
            lines.append(
                f"| {r['n']:,} | {r['d']} | {r['per_1k']:.2f} | {r['per_1k_cpu']:.2f} | {r['rest']:.2f} | "
                f"{r['setup']:.1f} | {r['paper'] / 60:.1f} | {r['paper_cpu'] / 60:.1f} | "
                f"{sweep * r['paper'] / 3600:.1f} |"
            )
    lines += [
        "",
        f"**Probes** (six probes trained together in one compiled call, batch {results['probe_batch']}, "
        f"{1 - results['probe_test_fraction']:.0%} of N trained). Seconds per epoch from warm runs of 1 and "
        f"of E epochs (E x N about {results['probe_samples'] / 1e6:.1f} million samples); 'per call': "
        "initial weights, split and test predictions; 'tracing': once per process and probe shape; a first "
        f"call at the default {epochs} epochs extrapolated.",
        "",
        "| N | D | E | wall s per epoch | CPU s per epoch | per call, wall s | tracing, wall s | "
        f"first call, {epochs} epochs (extrapolated): wall s | CPU s |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in probe_rows:
        if r["d"] in shown:
            lines.append(
                f"| {r['n']:,} | {r['d']} | {r['epochs']} | {r['per_epoch']:.2f} | "
                f"{r['per_epoch_cpu']:.2f} | {r['fixed']:.2f} | {r['tracing']:.1f} | {r['full']:.0f} | "
                f"{r['full_cpu']:.0f} |"
            )
    # The histogram table: the smallest D at every N, and every D at the largest N (all in the figure).
    histogram_dims = sorted({r["d"] for r in histogram_rows})
    histogram_largest = max(r["n"] for r in histogram_rows)
    seconds = {(r["n"], r["d"]): r["seconds"] for r in histogram_rows}
    below = [
        seconds[n, d] / seconds[n, histogram_dims[0]]
        for n, d in seconds
        if n < histogram_largest and d != histogram_dims[0]
    ]
    lines += [
        "",
        f"**Histogram MI** (D <= {histogram_dims[-1]} only; about sqrt(N) cells; six factors). One "
        f"estimate; a {sweep}-sigma sweep is {sweep} of them.",
    ]
    if below:
        lines[-1] += (
            f" Below N = {histogram_largest:,}, D = {_words(histogram_dims[1:])} cost {min(below):.1f} to "
            f"{max(below):.1f}x what D = {histogram_dims[0]} costs (plotted in the figure)."
        )
    lines += ["", "| N | D | s per estimate |", "|---|---|---|"]
    for r in histogram_rows:
        if r["d"] == histogram_dims[0] or r["n"] == histogram_largest:
            lines.append(f"| {r['n']:,} | {r['d']} | {r['seconds']:.3f} |")

    paper = sorted(r["paper"] for r in mine_rows)
    probe_large = [r["full"] for r in probe_rows if r["n"] == largest]
    per_1k_cpu = [r["per_1k_cpu"] for r in mine_rows]
    spread_over_n = max(
        max(r["per_1k_cpu"] for r in mine_rows if r["d"] == d)
        / min(r["per_1k_cpu"] for r in mine_rows if r["d"] == d)
        for d in dims
    )
    by_dim = {d: np.mean([r["per_1k_cpu"] for r in mine_rows if r["d"] == d]) for d in dims}
    rest_low, rest_high, rest_per_sample = _growth(mine_rows, "rest")
    epoch_low, epoch_high, epoch_per_sample = _growth(probe_rows, "per_epoch_cpu")
    _, _, histogram_per_sample = _growth(histogram_rows, "seconds")
    probe_by_dim = [
        r["per_epoch_cpu"]
        / next(s["per_epoch_cpu"] for s in probe_rows if (s["n"], s["d"]) == (r["n"], dims[0]))
        for r in probe_rows
        if r["d"] == dims[-1]
    ]
    histogram_samples = sorted({r["n"] for r in histogram_rows})
    per_sample_us = {
        n: 1e6 * np.mean([r["seconds"] for r in histogram_rows if r["n"] == n]) / n for n in histogram_samples
    }
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
        verdict = "No super-linear growth was found beyond the log N of sorting."
    else:
        verdict = "Some costs were lost in the noise of this run."
    unshown_text = f"; the D = {_words(unshown)} rows are in the figure" if unshown else ""
    lines += [
        "",
        f"What a paper-setting evaluation costs on this machine: one MINE estimate "
        f"({results['paper_steps']:,} steps, {results['paper_eval_samples']:,} samples, six factors, "
        f"`evaluate.py`'s default) takes {paper[0] / 60:.1f} to {paper[-1] / 60:.1f} min of wall time over "
        f"all {len(mine_rows)} settings, and the {sweep}-sigma sweep of the paper's figures "
        f"{sweep * paper[0] / 3600:.1f} to {sweep * paper[-1] / 3600:.1f} h; the probes ({epochs} epochs) "
        f"take {min(probe_large):.0f} to {max(probe_large):.0f} s at N = {largest:,}; histogram MI takes at "
        f"most {max(r['seconds'] for r in histogram_rows):.2f} s per estimate.",
        "",
        f"How each grows. A MINE step draws a batch of {results['mine_batch']}, so its cost does not depend "
        f"on N ({min(per_1k_cpu):.1f} to {max(per_1k_cpu):.1f} CPU s per 1000 steps over all "
        f"{len(mine_rows)} settings, at most {spread_over_n:.2f}x apart at one D{unshown_text}); D = "
        f"{dims[-1]} costs {by_dim[dims[-1]] / by_dim[dims[0]]:.1f}x D = {dims[0]} in CPU time. Only the "
        f"final average grows with N: {rest_low:.0f}x to {rest_high:.0f}x from N = {smallest:,} to "
        f"{largest:,} ({largest // smallest}x the samples). A probe epoch's CPU time grows {epoch_low:.0f}x "
        f"to {epoch_high:.0f}x over the same range, and D = {dims[-1]} costs {min(probe_by_dim):.1f}x to "
        f"{max(probe_by_dim):.1f}x D = {dims[0]}. Histogram MI sorts each factor once, so it grows as "
        f"N log N ({per_sample_us[histogram_samples[-2]]:.2f} us per sample at N = "
        f"{histogram_samples[-2]:,}, {per_sample_us[histogram_samples[-1]]:.2f} at "
        f"{histogram_samples[-1]:,}). Per sample, from the smallest N to the largest and at the D where it "
        "grows most: "
        + ", ".join(f"{name} {ratio:.2f}x" for name, ratio in per_sample.items())
        + f". {verdict}",
        "",
        "![MINE cost](docs/figures/benchmarks/evaluation_cost_mine.png)",
        "![probe cost](docs/figures/benchmarks/evaluation_cost_probes.png)",
        "![histogram MI cost](docs/figures/benchmarks/evaluation_cost_histogram.png)",
        "",
        f"The whole benchmark took {results['total_seconds'] / 60:.1f} min. "
        + load_text(results, " shared with other jobs, so absolute times vary"),
        "",
        f"Command: `{results['command']}`",
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
