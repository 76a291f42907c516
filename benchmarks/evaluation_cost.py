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

  python -m benchmarks.evaluation_cost [--mine_steps 300] [--no_write]
"""

from __future__ import annotations

import dataclasses
import os
import time

import numpy as np

from abc_tf.data.shapes3d.family import FACTOR_SIZES
from abc_tf.evaluation.estimators import histogram_mi, mine, noise, probes
from benchmarks.report import (
    FIGURES,
    argument_parser,
    load_line,
    log_log_axes,
    machine_line,
    publish,
    save_results,
)

SAMPLES = (16_384, 65_536, 262_144)
DIMS = (8, 64, 256)
HISTOGRAM_SAMPLES = (16_384, 65_536, 262_144, 1_048_576)
HISTOGRAM_DIMS = (1, 2, 3)
FIRST_STEPS = 50
PROBE_SAMPLES = 5 * 262_144  # samples of the longer probe run (5 epochs at the largest N)
REPEATS = 3  # MINE timings, the fastest kept
SIGMA = 0.1


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

    sweep = noise.PAPER_NUM_SIGMAS
    lines = [
        machine_line(),
        "",
        "Random embeddings [N, D] with the six factors of Shapes3D "
        f"(value counts {FACTOR_SIZES}); noise sigma {SIGMA}.",
        "",
        f"**MINE** (six statistics networks trained together, batch {mine.PAPER_BATCH_SIZE}, `eval_samples` "
        f"= N). Seconds per 1000 steps: the difference of estimates of {FIRST_STEPS} and "
        f"{FIRST_STEPS + args.mine_steps} steps on one traced estimator, the fastest of {REPEATS} of each. "
        "'rest': the remainder of an estimate (the final Donsker-Varadhan average over N samples, the "
        f"resets). The paper column is **extrapolated**, not run: {mine.PAPER_STEPS:,} steps at the measured "
        f"rate plus the rest scaled to {mine.PAPER_EVAL_SAMPLES:,} samples, for one sigma; "
        f"`--num_sigmas={sweep}` (the paper's sweep) costs {sweep} times that.",
        "",
        "Wall seconds are what this shared machine took; CPU seconds (all threads of the process) hardly "
        "depend on the other jobs, and bound the wall time of an idle machine from above.",
        "",
        "| N | D | wall s per 1000 steps | CPU s per 1000 steps | rest of an estimate, wall s | "
        "first estimate (build + trace), wall s | paper setting, one sigma (extrapolated): wall minutes | "
        f"CPU minutes | {sweep}-sigma sweep (extrapolated): wall h |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in mine_rows:
        lines.append(
            f"| {r['n']:,} | {r['d']} | {r['per_1k']:.2f} | {r['per_1k_cpu']:.2f} | {r['rest']:.2f} | "
            f"{r['setup']:.1f} | {r['paper'] / 60:.1f} | {r['paper_cpu'] / 60:.1f} | "
            f"{sweep * r['paper'] / 3600:.1f} |"
        )
    lines += [
        "",
        "**Probes** (six probes trained together in one compiled call, batch "
        f"{probes.ProbeSettings().batch_size}, 80% of N trained). Seconds per epoch from warm runs of 1 and "
        "of E epochs (E x N about 1.3 million samples); 'per call': the probes' initial weights, the split "
        "and the test predictions; 'tracing': building and tracing the compiled loop, once per process and "
        f"shape of probes (the first call); a first call at the default {probes.ProbeSettings().epochs} "
        "epochs extrapolated.",
        "",
        "| N | D | E | wall s per epoch | CPU s per epoch | per call, wall s | tracing, wall s | "
        f"first call, {probes.ProbeSettings().epochs} epochs (extrapolated): wall s | CPU s |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in probe_rows:
        lines.append(
            f"| {r['n']:,} | {r['d']} | {r['epochs']} | {r['per_epoch']:.2f} | {r['per_epoch_cpu']:.2f} | "
            f"{r['fixed']:.2f} | {r['tracing']:.1f} | {r['full']:.0f} | {r['full_cpu']:.0f} |"
        )
    lines += [
        "",
        f"**Histogram MI** (D <= 3 only; about sqrt(N) cells; six factors). One estimate; a {sweep}-sigma "
        f"sweep is {sweep} of them.",
        "",
        "| N | D | s per estimate |",
        "|---|---|---|",
    ]
    for r in histogram_rows:
        lines.append(f"| {r['n']:,} | {r['d']} | {r['seconds']:.3f} |")
    paper = sorted(r["paper"] for r in mine_rows)
    largest = max(SAMPLES)
    probe_large = [r for r in probe_rows if r["n"] == largest]
    per_1k_cpu = [r["per_1k_cpu"] for r in mine_rows]
    by_dim = {d: np.mean([r["per_1k_cpu"] for r in mine_rows if r["d"] == d]) for d in DIMS}
    hist_us = {
        n: 1e6 * np.mean([r["seconds"] for r in histogram_rows if r["n"] == n]) / n for n in HISTOGRAM_SAMPLES
    }
    lines += [
        "",
        f"What a paper-setting evaluation costs on this machine: one MINE estimate ({mine.PAPER_STEPS:,} "
        f"steps, {mine.PAPER_EVAL_SAMPLES:,} samples, six factors, `evaluate.py`'s default) takes "
        f"{paper[0] / 60:.1f} to {paper[-1] / 60:.1f} min of wall time over these settings, and the "
        f"{sweep}-sigma sweep of the paper's figures {sweep * paper[0] / 3600:.1f} to "
        f"{sweep * paper[-1] / 3600:.1f} h; the probes ({probes.ProbeSettings().epochs} epochs) take "
        f"{min(r['full'] for r in probe_large):.0f} to {max(r['full'] for r in probe_large):.0f} s at N = "
        f"{largest:,}; histogram MI is negligible.",
        "",
        f"How each grows. A MINE step draws a batch of {mine.PAPER_BATCH_SIZE} from the N embeddings, so its "
        f"cost does not depend on N ({min(per_1k_cpu):.1f} to {max(per_1k_cpu):.1f} CPU s per 1000 steps "
        f"over all {len(mine_rows)} settings) and mildly on D (D = {DIMS[-1]} costs "
        f"{by_dim[DIMS[-1]] / by_dim[DIMS[0]]:.1f}x D = {DIMS[0]} in CPU time: the first layer's (D + 1) x "
        "128 weights sit next to two 128 x 128 layers); only the final average grows, linearly, with the "
        "samples it averages. Probe epochs grow linearly with N and mildly with D. Histogram MI holds about "
        "sqrt(N) cells and sorts each factor once (`np.unique`), so it grows as N log N: "
        f"{hist_us[HISTOGRAM_SAMPLES[-2]]:.2f} us per sample at N = {HISTOGRAM_SAMPLES[-2]:,}, "
        f"{hist_us[HISTOGRAM_SAMPLES[-1]]:.2f} at N = {HISTOGRAM_SAMPLES[-1]:,}, the rest of the rise being "
        "arrays (48 MB of factors at 10^6) that no longer fit in cache; at "
        f"{max(r['seconds'] for r in histogram_rows):.2f} s per estimate at most it needs no fix. No other "
        "super-linear growth was found.",
    ]
    body = (
        "\n".join(lines)
        + "\n\n"
        + "\n".join(
            [
                "![MINE cost](docs/figures/benchmarks/evaluation_cost_mine.png)",
                "![probe cost](docs/figures/benchmarks/evaluation_cost_probes.png)",
                "![histogram MI cost](docs/figures/benchmarks/evaluation_cost_histogram.png)",
                "",
                f"The whole benchmark took {total / 60:.1f} min. "
                + load_line(load_start, " shared with other jobs, so absolute times vary"),
                "",
                f"Command: `python -m benchmarks.evaluation_cost --mine_steps {args.mine_steps}`",
            ]
        )
    )

    def draw() -> None:
        _plot(
            mine_rows,
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
            probe_rows,
            [("per_epoch_cpu", "o-", "CPU s / epoch"), ("per_epoch", "o:", "wall s / epoch")],
            "seconds per probe epoch",
            "Probe training cost (6 probes)",
            os.path.join(FIGURES, "evaluation_cost_probes.png"),
        )
        _plot(
            histogram_rows,
            [("seconds", "o-", "wall s")],
            "seconds per estimate",
            "Histogram MI cost (6 factors)",
            os.path.join(FIGURES, "evaluation_cost_histogram.png"),
        )

    publish("Evaluation cost against sample count and embedding size", body, not args.no_write, draw)
    if not args.no_write:
        save_results(
            "evaluation_cost",
            {
                "mine_steps": args.mine_steps,
                "mine": mine_rows,
                "probes": probe_rows,
                "histogram": histogram_rows,
                "total_seconds": total,
            },
        )


if __name__ == "__main__":
    main()
