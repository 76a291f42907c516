"""The benchmark suite: for each experiment preset, in one run on one machine,

- steps/s and images/s of compiled training (ABCModel.fit) against a plain eager loop of
  the same step (the authors' style), and the effect of steps_per_execution, jit_compile
  and mixed precision;
- data-pipeline throughput against what the training step consumes (goal: >= 2x);
- peak resident memory of the process (pipeline plus training).

Each experiment runs in its own process so that its peak memory is its own. On a machine with
a GPU the section title says so, so CPU and GPU figures sit side by side in BENCHMARKS.md.

  python benchmarks/run_all.py [--experiments shapes3d,mnist] [--steps 30] [--no_write]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

DEFAULT_EXPERIMENTS = "shapes3d,shapes3d_hue_baseline,mnist,pose_quick"


def measure(experiment: str, steps: int) -> dict:
    """Runs in the child process: every figure of one experiment."""
    import numpy as np

    from abc_tf import config as config_lib
    from abc_tf import data, training
    from benchmarks.train_step import eager_steps_per_second, fit_steps_per_second

    config = config_lib.get_preset(experiment)
    family = data.family_module(config.data)
    try:
        dataset = family.make_dataset(config, seed=0)
    except ValueError as error:
        return {"experiment": experiment, "skipped": str(error)}
    iterator = iter(dataset)
    batch = {key: value.numpy() for key, value in next(iterator).items()}
    next(iterator)
    start = time.perf_counter()
    for _ in range(steps):
        next(iterator)
    pipeline = steps / (time.perf_counter() - start)
    images = sum(int(np.prod(batch[key].shape[:2])) for key in batch if key.startswith("set_"))

    full = config.replace(mixed_precision=False)
    mixed = config.replace(mixed_precision=True)
    kwargs = dict(similarity=config.similarity, temperature=config.temperature, loss_type=training.loss_type(config))
    policy = training.precision_policy(mixed)
    rates = {"eager": eager_steps_per_second(lambda: training.build_encoder(full), batch, steps, config.similarity, config.temperature)}
    for name, jit, spe, run_config in (
        ("fit", False, 1, full),
        ("fit_spe10", False, 10, full),
        ("fit_jit_spe10", True, 10, full),
        ("fit_mixed_spe10", False, 10, mixed),
    ):
        # build_encoder sets the global precision policy from the config it is given.
        build = lambda run_config=run_config: training.build_encoder(run_config)  # noqa: E731
        rates[name] = fit_steps_per_second(build, batch, steps, jit, spe, training.precision_policy(run_config), kwargs)
    return {
        "experiment": experiment,
        "model": config.model,
        "images_per_step": images,
        "pipeline_steps_per_s": pipeline,
        "rates": rates,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "mixed_policy": policy,
    }


def table(results: list[dict], steps: int) -> str:
    from benchmarks.report import machine_line

    lines = [
        machine_line(),
        "",
        f"{steps} timed steps per figure, after a warm-up. Speed-ups are against the eager loop measured in the",
        "same process. Pipeline / step: batches/s the data pipeline delivers over the best compiled",
        "training rate (goal >= 2x). Goal for training: >= 3x the eager loop.",
        "",
        "| experiment | model | images/step | eager steps/s | fit | fit spe=10 | fit spe=10 XLA | fit spe=10 mixed | best images/s | pipeline steps/s | pipeline / step | peak RSS MB |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for result in results:
        if "skipped" in result:
            lines.append(f"| {result['experiment']} | skipped: {result['skipped']} |" + " |" * 10)
            continue
        rates = result["rates"]
        eager = rates["eager"]
        best = max(value for key, value in rates.items() if key != "eager")
        cells = [f"{rates[key]:.2f} ({rates[key] / eager:.1f}x)" for key in ("fit", "fit_spe10", "fit_jit_spe10", "fit_mixed_spe10")]
        lines.append(
            f"| {result['experiment']} | {result['model']} | {result['images_per_step']} | {eager:.2f} | "
            + " | ".join(cells)
            + f" | {best * result['images_per_step']:.0f} | {result['pipeline_steps_per_s']:.1f} | "
            f"{result['pipeline_steps_per_s'] / best:.1f}x | {result['peak_rss_mb']:.0f} |"
        )
    lines += ["", f"Mixed precision policy: {results[0].get('mixed_policy', '')}.", "",
              "Command: `python benchmarks/run_all.py`"]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--experiments", default=DEFAULT_EXPERIMENTS)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--no_write", action="store_true")
    args = parser.parse_args()
    if args.child:
        print("RESULT" + json.dumps(measure(args.child, args.steps)))
        return
    results = []
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
    for experiment in args.experiments.split(","):
        completed = subprocess.run(
            [sys.executable, os.path.abspath(__file__), "--child", experiment, "--steps", str(args.steps)],
            capture_output=True, text=True, env=env, cwd=ROOT,
        )
        lines = [line for line in completed.stdout.splitlines() if line.startswith("RESULT")]
        if completed.returncode or not lines:
            results.append({"experiment": experiment, "skipped": f"failed: {completed.stderr.strip().splitlines()[-1:]}"})
        else:
            results.append(json.loads(lines[-1][len("RESULT"):]))
        print(results[-1], flush=True)
    body = table(results, args.steps)
    print(body)
    if not args.no_write:
        import tensorflow as tf

        from benchmarks.report import write_section

        device = "GPU" if tf.config.list_physical_devices("GPU") else "CPU"
        write_section(f"Benchmark suite ({device})", body)


if __name__ == "__main__":
    main()
