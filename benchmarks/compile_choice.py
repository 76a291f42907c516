"""``--trainer.jit_compile=auto`` against the two settings it chooses between, in whole training runs.

Each preset trains the steps of its row of :data:`ROWS` on its built-in procedural data, with the
default steps per call, three times a round: pinned to the plain graph (``false``), pinned to XLA
(``true``), and ``auto``, which times both on its first calls and trains on with the faster
(``abc_tf.runs.compile_choice``). The time is the fit's wall-clock from its start to the end of its
last call: tracing, XLA's compile and auto's timing are in it; data set-up, checkpoints, the
end-of-run measures and the export are not. Rounds interleave the three settings; medians are
reported. The rows: the ``mnist`` preset as it is, a run too short for auto to try XLA
(``abc_tf.runs.compile_choice.MIN_SECONDS_LEFT``), and ML-VAE's MNIST step over 20,000 steps, long
enough that auto times both. auto's own timings (its median call in each mode it tried) are kept.

Writes docs/figures/benchmarks/compile_choice.json and the section of BENCHMARKS.md.

  python -m benchmarks.compile_choice [--rounds=1] [--no_write]
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from unittest import mock

import keras

from abc_tf.runs import compile_choice, training
from abc_tf.runs.compile_choice import MIN_SECONDS_LEFT
from abc_tf.runs.experiments import get_preset
from benchmarks.report import argument_parser, host, measured, publish, save_results

TITLE = "XLA or the plain graph, chosen by timing (CPU)"
FILE = "docs/figures/benchmarks/compile_choice.json"
ROWS = (("mnist", 500), ("mnist_ml_vae_quick", 20_000))  # preset, steps
MODES = ("false", "true", "auto")
NAMES = {"false": "plain graph", "true": "XLA"}


class FitTimer(keras.callbacks.Callback):
    """Seconds from the fit's start to the end of its last call, and whether it ended under XLA."""

    def on_train_begin(self, logs=None):
        self.start = self.end = time.perf_counter()

    def on_train_batch_end(self, batch, logs=None):
        self.end = time.perf_counter()

    def on_train_end(self, logs=None):
        self.seconds = self.end - self.start
        self.xla = bool(self.model.jit_compile)


def train_once(preset: str, mode: str, steps: int) -> tuple[FitTimer, dict[str, float]]:
    """The run's timer, and auto's median call seconds by mode ({} when not auto)."""
    config = get_preset(preset).replace(source="procedural", steps=steps, log_every=steps, jit_compile=mode)
    timer, made = FitTimer(), []

    class Kept(compile_choice.ChooseCompile):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            made.append(self)

    with tempfile.TemporaryDirectory() as run_dir, mock.patch.object(compile_choice, "ChooseCompile", Kept):
        training.train(config, os.path.join(run_dir, "run"), callbacks=[timer], verbose=0)
    return timer, (made[0].seconds if made else {})


def measure(rounds: int) -> dict:
    rows = []
    for preset, steps in ROWS:
        seconds = {mode: [] for mode in MODES}
        auto_xla, auto_calls = [], []
        for _ in range(rounds):
            for mode in MODES:
                timer, timed = train_once(preset, mode, steps)
                seconds[mode].append(timer.seconds)
                if mode == "auto":
                    auto_xla.append(timer.xla)
                    auto_calls.append(timed)
                print(preset, mode, f"{timer.seconds:.1f} s", flush=True)
        rate = {mode: steps / statistics.median(values) for mode, values in seconds.items()}
        faster, slower = sorted(("false", "true"), key=lambda mode: -rate[mode])
        config = get_preset(preset).replace(steps=steps, log_every=steps)
        rows.append(
            {
                "preset": preset,
                "steps": steps,
                "steps_per_execution": training.steps_per_execution(config),
                "seconds": seconds,
                "steps_per_s": rate,
                "auto_chose_xla": auto_xla,
                "auto_call_seconds": auto_calls,
                "faster_pinned": faster,
                "auto_over_faster": rate["auto"] / rate[faster],
                "auto_over_slower": rate["auto"] / rate[slower],
            }
        )
    return {"rounds": rounds, "min_seconds_left": MIN_SECONDS_LEFT, "rows": rows}


def _choices(row: dict) -> str:
    return ", ".join(
        ("XLA" if xla else "plain graph") + (" (both timed)" if "xla" in timed else " (XLA not tried)")
        for xla, timed in zip(row["auto_chose_xla"], row["auto_call_seconds"])
    )


def row_reading(row: dict, min_seconds_left: float) -> str:
    short = row["steps"] / row["steps_per_s"]["false"] < min_seconds_left
    right = sum(xla == (row["faster_pinned"] == "true") for xla in row["auto_chose_xla"])
    return f"{right} of {len(row['auto_chose_xla'])} runs of `{row['preset']}`" + (
        f" (under {min_seconds_left / 60:g} min, where auto keeps the plain graph)" if short else ""
    )


def reading(results: dict) -> str:
    rows = "; ".join(row_reading(row, results["min_seconds_left"]) for row in results["rows"])
    return f"Auto chose the faster setting in {rows}."


def section(results: dict) -> str:
    """The section of BENCHMARKS.md, from the results file alone."""
    lines = [
        "Whole runs with `--trainer.jit_compile=false`, `=true` and `=auto`, compiling included.",
        "",
        "| preset | steps | plain graph steps/s | XLA steps/s | auto steps/s | auto chose "
        "| auto over the faster |",
        "|---|---|---|---|---|---|---|",
    ]
    for index, row in enumerate(results["rows"]):
        link = f"{FILE}#/rows/{index}"
        rates = " | ".join(f"[{row['steps_per_s'][mode]:.2f}]({link}/steps_per_s/{mode})" for mode in MODES)
        lines.append(
            f"| `{row['preset']}` | {row['steps']:,} | {rates} | {_choices(row)} | "
            f"[{row['auto_over_faster']:.2f}]({link}/auto_over_faster) |"
        )
    lines += ["", f"`{results['command']}`, {host(results)}", "", reading(results)]
    return "\n".join(lines)


def main() -> None:
    parser = argument_parser(__doc__)
    parser.add_argument("--rounds", type=int, default=1, help="Rounds; the median is reported.")
    args = parser.parse_args()
    load_start = os.getloadavg()[0]
    results = measure(args.rounds)
    results.update(measured(load_start))
    results["command"] = f"python -m benchmarks.compile_choice --rounds={args.rounds}"
    if not args.no_write:
        save_results("compile_choice", results)
    publish(TITLE, section(results), not args.no_write)


if __name__ == "__main__":
    main()
