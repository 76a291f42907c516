"""GPU readiness checked on this CPU: every method's training step under XLA and under mixed_float16.

Each method runs on its quick preset. One check compiles its step with XLA, ``jit_compile=True`` as
GPUs and TPUs run it. The other trains under ``mixed_float16`` with loss scaling, every optimizer a
``LossScaleOptimizer``. That is what ``--trainer.mixed_precision`` gets on a GPU. Each check must
train with finite losses. Both report steps/s on this CPU: 2 warm-up steps, then ``--steps`` steps
timed, fed one batch from memory, schedules in their full phase. The steps/s show that the steps
run, not what a GPU gains: CPUs emulate float16. The test suite has not run on a GPU with
TensorFlow. So these checks are the evidence a GPU user gets, with tests/test_methods.py, which
makes them on tiny runs.

It also says what ``--trainer.mixed_precision`` gets on this host, by abc_tf.runs.precision. For
every preset that turns it on, it says what that preset gets here, on a GPU and on a CPU without
native bfloat16. The MNIST methods train on the procedural digits, ``--data.source=procedural``, so
the script needs no files. The step's cost does not depend on which digits it sees.

Writes docs/figures/benchmarks/gpu_readiness.json and the section of BENCHMARKS.md from it.

  python -m benchmarks.gpu_readiness [--steps 5] [--no_write]
"""

from __future__ import annotations

import argparse
import json
import math
import os

from abc_tf.runs import experiments
from benchmarks import report

TITLE = "GPU readiness, checked on the CPU"
FILE = "docs/figures/benchmarks/gpu_readiness.json"
SETTINGS = {"xla_float32": "float32", "xla_mixed_float16": "mixed_float16"}


def measure(method: str, policy: str, steps: int) -> dict:
    """One method's preset compiled with XLA under ``policy``.
    It reports whether it trains, whether its losses are finite, its optimizers' loss scaling
    and its steps/s."""
    import keras
    import numpy as np
    import tensorflow as tf

    from abc_tf import data
    from abc_tf.runs import training
    from benchmarks.loops import EpochTimer

    config = experiments.quick_presets()[method].replace(jit_compile=True, mixed_precision=False)
    if config.data.family == "mnist":
        config = config.replace(source="procedural")
    keras.backend.clear_session()
    try:
        model = training.build_model(config, policy=policy)
    finally:
        keras.mixed_precision.set_global_policy("float32")
    family = data.get_family(config.data.family)
    batch = next(iter(training.make_family_dataset(family, config, start_step=0)))
    dataset = tf.data.Dataset.from_tensors(batch).repeat()
    model.optimizer.iterations.assign(
        config.trainer.steps * 3 // 4
    )  # every schedule in its full phase (PMP: L_cons on)
    scaled = all(
        isinstance(optimizer, keras.optimizers.LossScaleOptimizer) for optimizer in model.optimizers()
    )
    timer = EpochTimer()
    try:
        warm = model.fit(dataset, epochs=1, steps_per_epoch=2, verbose=0, shuffle=False)  # compiles
        timed = model.fit(
            dataset, epochs=1, steps_per_epoch=steps, verbose=0, shuffle=False, callbacks=[timer]
        )
    except Exception as error:  # noqa: BLE001 (an op XLA cannot compile, for one: reported, not raised)
        return {"trains": False, "error": str(error).strip().splitlines()[0][:200], "loss_scaled": scaled}
    losses = warm.history["loss"] + timed.history["loss"]
    return {
        "trains": True,
        "finite": bool(np.all(np.isfinite(losses))),
        "loss_scaled": scaled,
        "steps_per_s": steps / timer.seconds[-1],
        "last_loss": float(losses[-1]),
    }


def presets_precision() -> list[dict]:
    """What every preset that turns --trainer.mixed_precision on computes in: here, on a GPU and on a
    CPU without native bfloat16 (the last two simulated by abc_tf.runs.precision)."""
    from abc_tf.runs import precision

    gpu, no_bfloat16 = precision.Host(gpu=True), precision.Host(cpu_flags=frozenset({"avx2"}))
    return [
        {
            "preset": name,
            "here": precision.choose(True).policy,
            "gpu": precision.choose(True, gpu).policy,
            "cpu_without_bfloat16": precision.choose(True, no_bfloat16).policy,
        }
        for name, preset in sorted(experiments.presets().items())
        if preset.trainer.mixed_precision
    ]


def precision_facts() -> dict:
    """What the section says about precision, taken when measuring: section() reads no TensorFlow."""
    from abc_tf.runs import precision

    return {
        "precision": report.precision_line(),
        "warning": precision.choose(True, precision.Host()).warning,
        "presets": presets_precision(),
    }


def verdict(result: dict) -> str:
    if not result["trains"]:
        return f"no: {result['error']}"
    return "yes" if result["finite"] else "trains, loss not finite"


def rate(result: dict) -> str:
    return (
        f"{result['steps_per_s']:.2f}" if result["trains"] and math.isfinite(result["steps_per_s"]) else "-"
    )


def section(results: dict) -> str:
    """The section of BENCHMARKS.md, from the results file alone."""
    presets = "; ".join(
        f"`{row['preset']}` gets {row['here']} here, {row['gpu']} on a GPU, "
        f"{row['cpu_without_bfloat16']} without native bfloat16"
        for row in results["presets"]
    )
    methods = results["methods"]
    ready = [
        row["method"]
        for row in methods
        if verdict(row["xla_float32"]) == "yes"
        and verdict(row["xla_mixed_float16"]) == "yes"
        and row["xla_mixed_float16"]["loss_scaled"]
    ]
    others = [
        f"{row['method']} (XLA float32: {verdict(row['xla_float32'])}; mixed_float16: "
        f"{verdict(row['xla_mixed_float16'])})"
        for row in methods
        if row["method"] not in ready
    ]
    timed = [row for row in methods if rate(row["xla_float32"]) != "-"]
    slowest = min(timed, key=lambda row: row["xla_float32"]["steps_per_s"]) if timed else None
    lines = [
        f"Each method's step compiled with XLA, {results['steps']} steps, in float32 and in mixed_float16 "
        "with loss scaling (the GPU policy, emulated here).",
        "",
        f"`{results['command']}`, {report.host(results)}",
        "",
        f"{len(ready)} of {len(methods)} methods compile and train with a finite loss in both"
        + (f"; not: {'; '.join(others)}" if others else "")
        + "."
        + (f" Slowest: {slowest['method']}, {rate(slowest['xla_float32'])} steps/s." if slowest else "")
        + f" Mixed precision: {presets}.",
    ]
    return "\n".join(lines)


def main() -> None:
    parser = report.argument_parser(__doc__, leaves="BENCHMARKS.md")
    parser.add_argument("--steps", type=int, default=5, help="Timed steps per method and precision.")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:  # one method, both settings, in a fresh process
        print(
            "RESULT"
            + json.dumps({name: measure(args.child, policy, args.steps) for name, policy in SETTINGS.items()})
        )
        return
    load_start = os.getloadavg()[0]
    methods = []
    for method, preset in experiments.quick_presets().items():
        checks = report.run_child("benchmarks.gpu_readiness", ["--child", method, "--steps", str(args.steps)])
        methods.append({"method": method, "preset": preset.name, **checks})
        print(method, checks, flush=True)
    results = {
        "steps": args.steps,
        "methods": methods,
        **precision_facts(),
        **report.measured(load_start),
        "command": f"python -m benchmarks.gpu_readiness --steps {args.steps}",
    }
    report.publish(TITLE, section(results), write=not args.no_write)
    if not args.no_write:
        report.save_results("gpu_readiness", results)


if __name__ == "__main__":
    main()
