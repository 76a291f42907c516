"""Training speed of the ABC paper's baselines: the compiled step against the eager one.

The baselines are ML-VAE, CC-VAE and LORD. The eager step runs op by op through Keras ``run_eagerly``,
as a port of the authors' PyTorch code would. The figures are images per second and peak memory.

Each preset runs in a fresh process with four models built from one seed: eager, graph, XLA, and
graph in the host's ``--trainer.mixed_precision`` policy. Each is fed one batch of the preset's own
pipeline from memory. Each round times every model once, so a burst of load from other jobs hits all
four alike. The median per model is reported. Peak memory is the process's ``ru_maxrss`` after all
four, data banks included. TensorFlow's profiler counts the traced step's GFLOP. With the machine's
float32 matrix-product rate, that gives the float32 ceiling: the most any float32 loop could gain
over the eager one. LORD is timed in both stages, its step counter set inside each.

Writes docs/figures/benchmarks/baselines_speed.json and the section of BENCHMARKS.md. The pose rows
render their 64 x 64 banks, several GB each.

  python -m benchmarks.baselines_speed [--steps 10] [--rounds 3] [--no_write]
"""

from __future__ import annotations

import os
import resource
import statistics

from benchmarks import report

TITLE = "The paper's baselines: compiled step against eager"
FILE = "docs/figures/benchmarks/baselines_speed.json"
GOAL = 3  # compiled steps/s over eager the goal asks for
# (row, preset, step to start timing from: a stage of the method's schedule).
ROWS = (
    ("ML-VAE, MNIST", "mnist_ml_vae_quick", 0),
    ("ML-VAE, 64 x 64 pose", "pose_ml_vae_quick", 0),
    ("CC-VAE, MNIST", "mnist_cc_vae_quick", 0),
    ("CC-VAE, 64 x 64 pose", "pose_cc_vae_quick", 0),
    ("LORD stage 1, 64 x 64 pose", "pose_lord_quick", 0),
    ("LORD stage 2, 64 x 64 pose", "pose_lord_quick", -1),  # -1: the first step of stage 2
)
MODES = ("eager", "graph", "xla", "mixed")


def measure(preset: str, start: int, steps: int, rounds: int) -> dict:
    """One preset's ``{mode: steps/s}``, images per step and peak RSS in MiB.
    Each rate is the median of the rounds."""
    import keras
    import tensorflow as tf

    from abc_tf import data
    from abc_tf.runs import experiments
    from abc_tf.runs import precision, training
    from benchmarks import loops

    config = experiments.get_preset(preset)
    if config.data.family == "mnist":
        config = config.replace(source="procedural")  # the step's cost does not depend on which digits
    if start < 0:
        start = config.method.stage1_steps
    family = data.get_family(config.data.family)
    batch = next(iter(training.make_family_dataset(family, config, start_step=start)))
    dataset = tf.data.Dataset.from_tensors(batch).repeat()
    images = int(batch["set_a"].shape[0] * batch["set_a"].shape[1])  # every row trains on "sets" batches
    models, timers = {}, {}
    for mode in MODES:
        keras.backend.clear_session()
        model = training.build_model(
            config.replace(jit_compile=mode == "xla", steps_per_execution=1, mixed_precision=mode == "mixed")
        )
        model.run_eagerly = mode == "eager"
        model.optimizer.iterations.assign(start)
        timers[mode] = loops.EpochTimer()
        model.fit(
            dataset, epochs=1, steps_per_epoch=2, verbose=0, shuffle=False
        )  # traces, builds the optimizers
        models[mode] = model
    specs = {key: tf.TensorSpec(value.shape, value.dtype) for key, value in batch.items()}
    gflop = loops.graph_gflop(models["graph"].train_step, specs)
    rates = {mode: [] for mode in MODES}
    for _ in range(rounds):
        for mode in MODES:
            models[mode].fit(
                dataset, epochs=1, steps_per_epoch=steps, verbose=0, shuffle=False, callbacks=[timers[mode]]
            )
            rates[mode].append(steps / timers[mode].seconds[-1])
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {
        "preset": preset,
        "preset_jit_compile": config.trainer.jit_compile,
        "rates": {mode: statistics.median(values) for mode, values in rates.items()},
        "images": images,
        "peak_mib": peak_mib,
        "step": start,
        "gflop": gflop,
        "matmul_gflops": loops.matmul_gflops_per_s(tf.float32),
        "mixed_policy": precision.choose(True).policy,
    }


def _names(names: list[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def _span(values: list[float], spec: str = ".1f", unit: str = "x") -> str:
    """``2.5x``, or ``2.2-3.0x`` where the values differ at that precision."""
    low, high = format(min(values), spec), format(max(values), spec)
    return f"{low}{unit}" if low == high else f"{low}-{high}{unit}"


def _short(row: str) -> str:
    """A row's name without the image size: "ML-VAE, 64 x 64 pose" as "ML-VAE, pose"."""
    return row.replace("64 x 64 ", "")


def reading(rows: dict) -> str:
    """The paragraph under the table: which rows meet the goal, and where XLA is slower, from ``rows``.
    Row names hold commas ("ML-VAE, MNIST"), so lists of rows are joined by semicolons."""
    over_eager = {
        row: {mode: result["rates"][mode] / result["rates"]["eager"] for mode in MODES}
        for row, result in rows.items()
    }
    policy = next(iter(rows.values()))["mixed_policy"]
    float32_met = [row for row, ratio in over_eager.items() if max(ratio["graph"], ratio["xla"]) >= GOAL]
    mixed_only = [row for row in rows if row not in float32_met and over_eager[row]["mixed"] >= GOAL]
    missed = [row for row in rows if row not in float32_met and row not in mixed_only]
    sentences = [f"Goal compiled >= {GOAL}x eager: met in float32 by {len(float32_met)} of {len(rows)}."]
    if mixed_only:
        sentences.append(f"Met only in {policy} by {'; '.join(map(_short, mixed_only))}.")
    if missed:
        best = [f"{_short(row)} ({max(over_eager[row].values()):.2f}x)" for row in missed]
        sentences.append(f"Not met by {'; '.join(best)}.")
    lord = [row for row in rows if row.startswith("LORD")]
    xla_slower = [row for row in rows if rows[row]["rates"]["xla"] < rows[row]["rates"]["graph"]]
    others = [row for row in xla_slower if row not in lord]
    del others
    if lord and all(row in xla_slower for row in lord):
        slowdown = _span([rows[row]["rates"]["graph"] / rows[row]["rates"]["xla"] for row in lord], ".0f")
        sentences.append(
            f"LORD's XLA rows run {slowdown} slower: XLA here is slow on its stage switch's `tf.cond`."
        )
    return " ".join(sentences)


def section(results: dict) -> str:
    """The section of BENCHMARKS.md, from the results file alone."""
    rows = results["results"]
    policy = next(iter(rows.values()))["mixed_policy"]
    lines = [
        f"Steps/s of each quick preset from memory, median of {results['rounds']} rounds of "
        f"{results['steps']} steps; mixed: {policy}.",
        "",
        "| row | eager | graph | XLA | mixed |",
        "|---|---|---|---|---|",
    ]
    for row, result in rows.items():
        rate = result["rates"]
        lines.append(
            f"| {_short(row)} | "
            + " | ".join(f"{rate[mode]:.2f}" for mode in ("eager", "graph", "xla", "mixed"))
            + " |"
        )
    lines += [
        "",
        f"`{results['command']}`, {report.host(results)}",
        "",
        reading(rows),
    ]
    return "\n".join(lines)


def main() -> None:
    args = report.rounds_arguments(__doc__, steps=10, steps_help="Timed steps per model and round.")
    if args.steps <= 0 or args.rounds <= 0:
        raise SystemExit("--steps and --rounds must be positive.")

    def row(child: str) -> dict:  # one row in a fresh process: its own peak memory
        preset, start = child.split(":")
        return measure(preset, int(start), args.steps, args.rounds)

    if report.answer_child(args.child, {}, row):
        return
    load_start = os.getloadavg()[0]
    arguments = ["--steps", str(args.steps), "--rounds", str(args.rounds)]
    rows = report.run_children(
        "benchmarks.baselines_speed", {row: f"{preset}:{start}" for row, preset, start in ROWS}, arguments
    )
    results = {
        "steps": args.steps,
        "rounds": args.rounds,
        "results": rows,
        **report.measured(load_start),
        "command": f"python -m benchmarks.baselines_speed {' '.join(arguments)}",
    }
    if not args.no_write:
        report.save_results("baselines_speed", results)
    report.publish(TITLE, section(results), write=not args.no_write)


if __name__ == "__main__":
    main()
