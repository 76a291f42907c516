"""Every method's compiled training step against the host's own arithmetic limit.

It runs in one process, on each method's quick preset: the run its package names as ``QUICK``. The
model is built as ``train.py`` builds it, with the preset's precision and XLA setting. Its steps per
call are what the default flags give. ``fit`` trains it on one batch of the preset's own pipeline,
repeated from memory. Per method it reports three figures. TensorFlow's profiler counts the step's
floating-point work on the traced ``train_step``. Steps/s is the median of rounds. The third is the
fraction of the host's float32 matrix-product rate that the step reaches. That rate is timed just
before and just after each method, so a burst of load from other jobs hits both sides of the ratio.

Writes docs/figures/benchmarks/method_speed.json and the section of BENCHMARKS.md.

  python -m benchmarks.method_speed [--steps=20] [--rounds=3] [--no_write]
  python -m benchmarks.method_speed --table_only   # the section again from the JSON
"""

from __future__ import annotations

import os
import statistics
import time

from benchmarks import report

TITLE = "Every method's step against the host's matmul rate (CPU)"
FILE = "docs/figures/benchmarks/method_speed.json"


def measure_method(name: str, preset, steps: int, rounds: int) -> dict:
    """One method's row: GFLOP a step, steps/s, and the matmul rate around its timing."""
    import keras
    import tensorflow as tf

    from abc_tf import data
    from abc_tf.runs import training
    from benchmarks import loops

    config = preset
    if config.data.family == "mnist":
        config = config.replace(source="procedural")  # the step's cost does not depend on which digits
    family = data.get_family(config.data.family)
    batch = next(iter(training.make_family_dataset(family, config, start_step=0)))
    keras.backend.clear_session()
    model = training.build_model(config)
    per_call = training.steps_per_execution(config)
    model.steps_per_execution = per_call  # as training.train_prepared sets it
    specs = {key: tf.TensorSpec(value.shape, value.dtype) for key, value in batch.items()}
    run = loops.train_step_fit_runner(model, batch)
    gflop = loops.graph_gflop(model.train_step, specs)
    before = loops.matmul_gflops_per_s(tf.float32)
    rates, cpu = [], []
    for _ in range(rounds):
        start = time.process_time()
        rates.append(run(steps))
        cpu.append(time.process_time() - start)
    after = loops.matmul_gflops_per_s(tf.float32)
    steps_per_s = statistics.median(rates)
    matmul = (before + after) / 2
    return {
        "method": name,
        "preset": preset.name,
        "family": config.data.family,
        "batch_format": config.method.batch_format,
        "steps_per_execution": per_call,
        "jit_compile": config.trainer.jit_compile == "true",  # auto's timing is a fit's, not this loop's
        "policy": keras.mixed_precision.global_policy().name,
        "gflop_per_step": gflop,
        "steps_per_s": steps_per_s,
        "rates": rates,
        "cpu_s_per_step": statistics.median(cpu) / max(per_call, steps - steps % per_call),
        "matmul_gflops_before": before,
        "matmul_gflops_after": after,
        "gflops": None if gflop is None else gflop * steps_per_s,
        "of_matmul": None if gflop is None else gflop * steps_per_s / matmul,
    }


def measure(steps: int, rounds: int) -> dict:
    from abc_tf.runs import experiments

    rows = []
    for name, preset in sorted(experiments.quick_presets().items()):
        began = time.perf_counter()
        rows.append(measure_method(name, preset, steps, rounds))
        print(rows[-1], f"({time.perf_counter() - began:.0f} s)", flush=True)
    return {"steps": steps, "rounds": rounds, "rows": rows}


def _link(index: int, key: str, text: str) -> str:
    return f"[{text}]({FILE}#/rows/{index}/{key})"


def _row(index: int, row: dict) -> str:
    setting = ("" if row["policy"] == "float32" else f", {row['policy']}") + (
        ", XLA" if row["jit_compile"] else ""
    )
    rate = _link(index, "steps_per_s", f"{row['steps_per_s']:.2f}")
    if row["gflop_per_step"] is None:
        work = f"{rate} | -"
    else:
        matmul = _link(index, "of_matmul", f"{row['of_matmul']:.2f}")
        work = f"{rate} | {matmul}"
    return f"| {row['method']}{setting} | {work} |"


def command(results: dict) -> str:
    return f"python -m benchmarks.method_speed --steps={results['steps']} --rounds={results['rounds']}"


def section(results: dict) -> str:
    """The section of BENCHMARKS.md, from the results file alone."""
    lines = [
        f"Each quick preset, `fit` from memory, median of {results['rounds']} rounds of {results['steps']} "
        "steps; of matmul: its GFLOP/s over a float32 matmul's.",
        "",
        "| method | steps/s | of matmul |",
        "|---|---|---|",
    ]
    lines += [_row(index, row) for index, row in enumerate(results["rows"])]
    lines += [
        "",
        f"`{command(results)}`, {report.host(results)}",
        "",
        "Large convolutions come closest to the matmul rate; steps of a few GFLOP are too small to fill "
        "two cores.",
    ]
    return "\n".join(lines)


def main() -> None:
    parser = report.argument_parser(__doc__)
    parser.add_argument("--steps", type=int, default=20, help="Timed steps per method and round.")
    parser.add_argument("--rounds", type=int, default=3, help="Rounds; the median is reported.")
    parser.add_argument(
        "--table_only", action="store_true", help=f"Write the section from {FILE}; time nothing."
    )
    args = parser.parse_args()
    if args.steps <= 0 or args.rounds <= 0:
        raise SystemExit("--steps and --rounds must be positive.")
    if args.table_only:
        results = report.read_results(FILE)
    else:
        load_start = os.getloadavg()[0]
        results = measure(args.steps, args.rounds)
        results["machine"] = f"{report.machine_line()} {report.load_line(load_start)}"
        if not args.no_write:
            report.save_results("method_speed", results)
    report.publish(TITLE, section(results), not args.no_write)


if __name__ == "__main__":
    main()
