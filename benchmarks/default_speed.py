"""Training speed with default flags: the trainer's ``fit`` against a bare compiled step.

All loops run in one process on the ``mnist`` preset's step. That step is S4 with d=8, two sets of
64, the l2sq ABC loss, Adam and float32, with one batch repeated from memory. Each loop is timed in
turn, round after round, and the median is kept. The loops:

- the authors' style: an eager Python loop, each set embedded by its own encoder call.
- a bare compiled step: the same model, loss and optimizer in a ``tf.function`` called from a Python
  loop. It has no metrics, callbacks or iterator. It is the floor for ``fit``.
- ``AbcModel.fit`` with the default steps per call. ``--trainer.steps_per_execution`` defaults to
  auto, and ``abc_tf.runs.training.steps_per_execution`` gives the preset's value.
- ``AbcModel.fit`` at one step a call: ``--trainer.steps_per_execution=1``.

Writes docs/figures/benchmarks/default_speed.json and the section of BENCHMARKS.md.

  python -m benchmarks.default_speed [--steps=60] [--rounds=5] [--no_write]
"""

from __future__ import annotations

import os
import time

import numpy as np

import models
from abc_tf.runs import training
from abc_tf.runs.experiments import get_preset
from benchmarks import loops
from benchmarks import report
from benchmarks.report import argument_parser, measured, publish, save_results

EXPERIMENT = "mnist"
TITLE = "Training speed with default flags"
FILE = "docs/figures/benchmarks/default_speed.json"


def measure(steps: int, rounds: int) -> dict:
    config = get_preset(EXPERIMENT)
    auto = training.steps_per_execution(config)
    shape, size = (28, 28, 1), config.batch.set_size
    rng = np.random.default_rng(0)
    batch = {
        key: rng.integers(0, 256, size=(config.batch.pairs_per_step, size) + shape, dtype=np.uint8)
        for key in ("set_a", "set_b")
    }

    def build():
        return models.build(
            config.encoder.architecture,
            embedding_dim=config.encoder.embedding_dim,
            input_shape=shape,
        )

    kwargs = {"similarity": config.method.similarity, "temperature": config.method.temperature}
    runners = {
        "eager": loops.eager_runner(build, batch, config.method.similarity, config.method.temperature),
        "bare": loops.bare_runner(build, batch, model_kwargs=kwargs),
        "fit_default": loops.fit_runner(build, batch, steps_per_execution=auto, model_kwargs=kwargs),
        "fit_one_step_a_call": loops.fit_runner(build, batch, steps_per_execution=1, model_kwargs=kwargs),
    }
    rates = {name: [] for name in runners}
    cpu_ms = {name: [] for name in runners}
    for _ in range(rounds):
        for name, run in runners.items():
            start = time.process_time()
            rates[name].append(run(steps))
            cpu_ms[name].append(1e3 * (time.process_time() - start) / steps)
    median = {name: float(np.median(values)) for name, values in rates.items()}
    return {
        "experiment": EXPERIMENT,
        "auto_steps_per_execution": auto,
        "steps": steps,
        "rounds": rounds,
        "rows": [
            {
                "loop": name,
                "steps_per_s": median[name],
                "cpu_ms_per_step": float(np.median(cpu_ms[name])),
                "over_eager": median[name] / median["eager"],
                "over_bare": median[name] / median["bare"],
                "rates": rates[name],
            }
            for name in runners
        ],
    }


LABELS = {
    "eager": "the authors' eager loop",
    "bare": "a bare `tf.function` step",
    "fit_default": "`fit`, defaults (auto: {auto} steps a call)",
    "fit_one_step_a_call": "`fit`, 1 step a call",
}


def section(results: dict) -> str:
    """The section of BENCHMARKS.md, from the results file alone."""
    lines = [
        f"The `{results['experiment']}` preset's step from memory, each loop {results['steps']} steps in "
        f"turn, median of {results['rounds']} rounds.",
        "",
        "| loop | steps/s | CPU ms/step | over eager |",
        "|---|---|---|---|",
    ]
    for index, row in enumerate(results["rows"]):
        link = f"{FILE}#/rows/{index}"
        label = LABELS[row["loop"]].format(auto=results["auto_steps_per_execution"])
        lines.append(
            f"| {label} | [{row['steps_per_s']:.2f}]({link}/steps_per_s) | "
            f"[{row['cpu_ms_per_step']:.1f}]({link}/cpu_ms_per_step) | "
            f"[{row['over_eager']:.2f}]({link}/over_eager) |"
        )
    lines += ["", f"`{results['command']}`, {report.host(results)}"]
    return "\n".join(lines)


def main() -> None:
    parser = argument_parser(__doc__)
    parser.add_argument("--steps", type=int, default=60, help="Timed steps per loop and round.")
    parser.add_argument("--rounds", type=int, default=5, help="Rounds; the median is reported.")
    args = parser.parse_args()
    load_start = os.getloadavg()[0]
    results = measure(args.steps, args.rounds)
    results.update(measured(load_start))
    results["command"] = f"python -m benchmarks.default_speed --steps={args.steps} --rounds={args.rounds}"
    if not args.no_write:
        save_results("default_speed", results)
    publish(TITLE, section(results), not args.no_write)


if __name__ == "__main__":
    main()
