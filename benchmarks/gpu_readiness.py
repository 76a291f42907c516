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


def presets_precision() -> list[str]:
    """Table rows: every preset that turns --trainer.mixed_precision on, and what it gets where."""
    from abc_tf.runs import precision

    hosts = {
        "GPU": precision.Host(gpu=True),
        "CPU without native bfloat16": precision.Host(cpu_flags=frozenset({"avx2"})),
    }
    rows = []
    for name, preset in sorted(experiments.presets().items()):
        if preset.trainer.mixed_precision:
            here = precision.choose(True).policy
            rows.append(
                f"| `{name}` | {here} | "
                + " | ".join(precision.choose(True, host).policy for host in hosts.values())
                + " |"
            )
    return rows


def verdict(result: dict) -> str:
    if not result["trains"]:
        return f"no: {result['error']}"
    return "yes" if result["finite"] else "trains, loss not finite"


def rate(result: dict) -> str:
    return (
        f"{result['steps_per_s']:.2f}" if result["trains"] and math.isfinite(result["steps_per_s"]) else "-"
    )


def table(results: dict, steps: int, load_start: float) -> str:
    from abc_tf.runs import precision

    lines = [
        report.machine_line(),
        report.precision_line(),
        "",
        "What each preset that turns `--trainer.mixed_precision` "
        "on computes in, here and on two simulated hosts",
        "(`abc_tf.runs.precision.choose` with the host given). On a CPU without native bfloat16 the run",
        f"prints one line: `{precision.choose(True, precision.Host()).warning}`",
        "",
        "| preset | this host | a GPU | a CPU without native bfloat16 |",
        "|---|---|---|---|",
        *presets_precision(),
        "",
        "Every method's training step on its preset, compiled "
        "with XLA: float32, then mixed_float16 with loss scaling",
        "(the GPU precision, forced on this CPU). steps/s: "
        f"{steps} steps after a 2-step warm-up (compile), one batch",
        "fed from memory, schedules in their full phase; on "
        "this CPU float16 is emulated, so the mixed_float16",
        "column shows that the step runs, not what a GPU gains.",
        "",
        "| method | preset | compiles with XLA, finite loss | XLA float32 steps/s | "
        "mixed_float16: trains, finite loss | every optimizer loss-scaled | XLA mixed_float16 steps/s |",
        "|---|---|---|---|---|---|---|",
    ]
    for method, preset in experiments.quick_presets().items():
        full, mixed = results[method]["xla_float32"], results[method]["xla_mixed_float16"]
        lines.append(
            f"| {method} | `{preset.name}` | {verdict(full)} | {rate(full)} | {verdict(mixed)} | "
            f"{'yes' if mixed['loss_scaled'] else 'no'} | {rate(mixed)} |"
        )
    lines += [
        "",
        report.load_line(load_start),
        "",
        f"Command: `python -m benchmarks.gpu_readiness --steps {steps}`",
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
    results = {}
    for method in experiments.quick_presets():
        results[method] = report.run_child(
            "benchmarks.gpu_readiness", ["--child", method, "--steps", str(args.steps)]
        )
        print(method, results[method], flush=True)
    report.publish(TITLE, table(results, args.steps, load_start), write=not args.no_write)
    if not args.no_write:
        report.save_results("gpu_readiness", {"steps": args.steps, "results": results})


if __name__ == "__main__":
    main()
