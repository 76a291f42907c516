"""Training speed of the ABC paper's baselines (ML-VAE, CC-VAE, LORD; issue 27): each method's
compiled training step against the same step run eagerly, op by op (Keras ``run_eagerly``: the
loop a port of the authors' PyTorch code would run), with images per second and peak memory.

Per preset, in a fresh process: three models of the preset built from one seed (eager; compiled
graph; compiled with XLA), each fed one batch of the preset's own pipeline from memory, timed
in rounds (every model once per round, so a burst of load from other jobs hits all three
alike; the median per model is reported). Peak memory is the process's peak resident set
(``ru_maxrss``) after all three, the data banks included. LORD is timed in both stages
(its step counter set inside each).

  python -m benchmarks.baselines_speed [--steps 10] [--rounds 3] [--no_write]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import time

from benchmarks import report

TITLE = "The paper's baselines: compiled step against eager (issue 27)"
# (row, preset, step to start timing from: a stage of the method's schedule).
ROWS = (
    ("ML-VAE, MNIST", "mnist_ml_vae_quick", 0),
    ("ML-VAE, 64 x 64 pose", "pose_ml_vae_quick", 0),
    ("CC-VAE, MNIST", "mnist_cc_vae_quick", 0),
    ("CC-VAE, 64 x 64 pose", "pose_cc_vae_quick", 0),
    ("LORD stage 1, 64 x 64 pose", "pose_lord_quick", 0),
    ("LORD stage 2, 64 x 64 pose", "pose_lord_quick", -1),  # -1: the first step of stage 2
)
MODES = ("eager", "graph", "xla")


def measure(preset: str, start: int, steps: int, rounds: int) -> dict:
    """{mode: steps/s (median of rounds)}, images per step and peak RSS (MiB) of one preset."""
    import keras
    import tensorflow as tf

    from abc_tf import data, experiments
    from abc_tf.runs import training
    from benchmarks.loops import EpochTimer

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
        model = training.build_model(config.replace(jit_compile=mode == "xla", steps_per_execution=1))
        model.run_eagerly = mode == "eager"
        model.optimizer.iterations.assign(start)
        timers[mode] = EpochTimer()
        model.fit(dataset, epochs=1, steps_per_epoch=2, verbose=0, shuffle=False)  # traces, builds the optimizers
        models[mode] = model
    rates = {mode: [] for mode in MODES}
    for _ in range(rounds):
        for mode in MODES:
            models[mode].fit(dataset, epochs=1, steps_per_epoch=steps, verbose=0, shuffle=False, callbacks=[timers[mode]])
            rates[mode].append(steps / timers[mode].seconds[-1])
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"rates": {mode: statistics.median(values) for mode, values in rates.items()}, "images": images,
            "peak_mib": peak_mib, "step": start}


def table(results: dict, steps: int, rounds: int, load_start: float) -> str:
    lines = [
        report.machine_line(), "",
        f"Each row: {rounds} rounds of {steps} steps per model after a 2-step warm-up, one batch of the preset's own",
        "pipeline fed from memory, float32; the median steps/s per model. Images per step: the images the method",
        "reads (set A's stacks; ML-VAE, CC-VAE and LORD ignore set B, except CC-VAE's reverse cycle, which",
        "encodes half a stack of it more). Peak RSS: the process after all three models, data banks included.",
        "",
        "| row | preset | images/step | eager steps/s | graph steps/s | XLA steps/s | graph / eager | XLA / eager | XLA images/s | peak RSS (MiB) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row, preset, _ in ROWS:
        result = results[row]
        rate = result["rates"]
        lines.append(
            f"| {row} | `{preset}` | {result['images']} | {rate['eager']:.2f} | {rate['graph']:.2f} | {rate['xla']:.2f} | "
            f"{rate['graph'] / rate['eager']:.1f} | {rate['xla'] / rate['eager']:.1f} | {rate['xla'] * result['images']:.0f} | "
            f"{result['peak_mib']:.0f} |"
        )
    lines += ["", report.load_line(load_start), "",
              f"Command: `python -m benchmarks.baselines_speed --steps {steps} --rounds {rounds}`"]
    return "\n".join(lines)


def main() -> None:
    parser = report.argument_parser(__doc__, leaves="BENCHMARKS.md")
    parser.add_argument("--steps", type=int, default=10, help="Timed steps per model and round.")
    parser.add_argument("--rounds", type=int, default=3, help="Rounds (the median is reported).")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.steps <= 0 or args.rounds <= 0:
        raise SystemExit("--steps and --rounds must be positive.")
    if args.child:  # one row in a fresh process: its own peak memory
        preset, start = args.child.split(":")
        print("RESULT" + json.dumps(measure(preset, int(start), args.steps, args.rounds)))
        return
    load_start, results = os.getloadavg()[0], {}
    for row, preset, start in ROWS:
        began = time.perf_counter()
        results[row] = report.run_child("benchmarks.baselines_speed", ["--child", f"{preset}:{start}", "--steps", str(args.steps),
                                                                       "--rounds", str(args.rounds)])
        print(row, results[row], f"({time.perf_counter() - began:.0f} s)", flush=True)
    report.publish(TITLE, table(results, args.steps, args.rounds, load_start), write=not args.no_write)


if __name__ == "__main__":
    main()
