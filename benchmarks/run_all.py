"""The benchmark suite: training speed, arithmetic, pipeline and memory for each experiment preset.

Each preset is measured in one run on one machine:

- steps/s and images/s of compiled training, ``AbcModel.fit``, against a plain eager loop of the
  same step, the authors' style. Also the effect of steps_per_execution, jit_compile and mixed
  precision. Every setting is timed in turn, round after round, and the median of the rounds kept.
  So load from other jobs hits all of them alike.
- the arithmetic of one step against the machine's dense matrix-product rate, which bounds what any
  loop can reach.
- data-pipeline throughput against what training consumes, with a goal of >= 2x. And training fed
  by the real pipeline against training fed from memory.
- peak resident memory of the process.

'mixed' is what ``--trainer.mixed_precision`` gets on the host, by abc_tf.runs.precision. The
section says which: float32 on a CPU without native bfloat16.

Each experiment runs in its own process. This module writes the CPU section and
docs/figures/benchmarks/run_all.json; benchmarks/gpu.py runs the same children for the GPU section.

  python -m benchmarks.run_all [--experiments shapes3d,mnist] [--steps 30] [--rounds 3] [--no_write]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time

from abc_tf.runs import experiments
from benchmarks import report

TITLE = "Benchmark suite (CPU)"
FILE = "docs/figures/benchmarks/run_all.json"

DEFAULT_EXPERIMENTS = "shapes3d,shapes3d_hue_baseline,mnist,pose_quick"
# name: (jit_compile, steps_per_execution, mixed precision), fed from memory
FIT_SETTINGS = {
    "fit": (False, 1, False),
    "fit_spe10": (False, 10, False),
    "fit_xla": (True, 1, False),
    "fit_mixed": (False, 1, True),
    "fit_mixed_spe10": (False, 10, True),
}
COLUMNS = ["fit", "fit_spe10", "fit_xla", "fit_mixed", "fit_mixed_spe10", "fit_mixed_pipeline"]


def measure(experiment: str, steps: int, rounds: int) -> dict:
    """Runs in the child process: every figure of one experiment."""
    import numpy as np
    import tensorflow as tf

    from abc_tf import data
    from abc_tf.runs import training
    from benchmarks import loops

    config = experiments.get_preset(experiment)
    family = data.get_family(config.data.family)
    try:
        dataset = training.make_family_dataset(family, config, start_step=0)
    except ValueError as error:
        return {"experiment": experiment, "skipped": str(error)}
    iterator = iter(dataset)
    batch = {key: value.numpy() for key, value in next(iterator).items()}
    next(iterator)
    start = time.perf_counter()
    for _ in range(steps * rounds):
        next(iterator)
    pipeline = steps * rounds / (time.perf_counter() - start)
    del iterator
    images = sum(int(np.prod(batch[key].shape[:2])) for key in batch if key.startswith("set_"))

    full = config.replace(mixed_precision=False)
    mixed = config.replace(mixed_precision=True)
    kwargs = dict(
        similarity=config.method.similarity,
        temperature=config.method.temperature,
        loss_type=config.method.name,
    )
    mixed_policy = training.precision_policy(mixed)
    # untrained_encoder sets the global precision policy from its config; the runners reset it.
    build_full = lambda: training.untrained_encoder(full)  # noqa: E731
    build_mixed = lambda: training.untrained_encoder(mixed)  # noqa: E731
    runners = {
        "eager": loops.eager_runner(build_full, batch, config.method.similarity, config.method.temperature)
    }
    for name, (jit, spe, use_mixed) in FIT_SETTINGS.items():
        runners[name] = loops.fit_runner(
            build_mixed if use_mixed else build_full,
            batch,
            jit,
            spe,
            mixed_policy if use_mixed else "float32",
            kwargs,
        )
    rates = loops.interleaved_rates(runners, steps, rounds)
    fed = loops.compiled_model(build_mixed, policy=mixed_policy, model_kwargs=kwargs)
    rates["fit_mixed_pipeline"] = loops.pipeline_fit_rate(
        fed, training.make_family_dataset(family, config, start_step=0), steps, rounds
    )
    mixed_dtype = {"mixed_float16": tf.float16, "mixed_bfloat16": tf.bfloat16}.get(mixed_policy, tf.float32)
    return {
        "experiment": experiment,
        "model": config.encoder.architecture,
        "images_per_step": images,
        "gflop_per_step": loops.training_gflop(build_full(), images),
        "matmul_gflops": loops.matmul_gflops_per_s(tf.float32),
        "matmul_gflops_mixed": loops.matmul_gflops_per_s(mixed_dtype),
        "pipeline_steps_per_s": pipeline,
        "rates": rates,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "mixed_policy": mixed_policy,
    }


def _goal_text(timed: list[dict]) -> str:
    """Which experiments meet the two goals (best >= 3x eager, pipeline >= 2x training), from the rates."""
    best = {result["experiment"]: max(result["rates"][key] for key in COLUMNS) for result in timed}
    speedups = {
        result["experiment"]: best[result["experiment"]] / result["rates"]["eager"] for result in timed
    }
    pipelines = {
        result["experiment"]: result["pipeline_steps_per_s"] / best[result["experiment"]] for result in timed
    }

    def verdict(ratios: dict[str, float], goal: float) -> str:
        met = [name for name, ratio in ratios.items() if ratio >= goal]
        missed = [name for name, ratio in ratios.items() if ratio < goal]
        parts = ([f"met by {', '.join(met)}"] if met else []) + (
            [f"missed by {', '.join(missed)}"] if missed else []
        )
        return "; ".join(parts)

    return f"Goal best >= 3x eager: {verdict(speedups, 3.0)}. " + (
        "The pipeline outpaces training 2x in every row."
        if min(pipelines.values()) >= 2.0
        else f"Goal pipeline >= 2x training: {verdict(pipelines, 2.0)}."
    )


def section(results: dict) -> str:
    """The section of BENCHMARKS.md, from the results file alone."""
    rows, steps, rounds = results["experiments"], results["steps"], results["rounds"]
    timed = [result for result in rows if "skipped" not in result]
    policy = timed[0]["mixed_policy"] if timed else ""
    lines = [
        f"Steps/s of `fit` from memory, median of {rounds} rounds of {steps} steps (over eager); mixed: "
        f"{policy}. float32 ceiling: the float32 matmul rate over eager's.",
        "",
        "| experiment | eager | float32 | mixed | float32 ceiling | pipeline / training |",
        "|---|---|---|---|---|---|",
    ]
    for result in rows:
        if "skipped" in result:
            lines.append(f"| {result['experiment']} | skipped: {result['skipped']} |" + " |" * 4)
            continue
        rates, work = result["rates"], result["gflop_per_step"]
        eager = rates["eager"]
        best = max(rates[key] for key in COLUMNS)
        cells = [
            max(rates["fit"], rates["fit_spe10"]),
            rates["fit_mixed_spe10"],
        ]
        lines.append(
            f"| {result['experiment']} | {eager:.2f} | "
            + " | ".join(f"{rate:.2f} ({rate / eager:.1f}x)" for rate in cells)
            + f" | {result['matmul_gflops'] / (eager * work):.1f}x | "
            f"{result['pipeline_steps_per_s'] / best:.1f}x |"
        )
    lines += [
        "",
        f"`{results['command']}`, {report.host(results)}",
        *(["", _goal_text(timed)] if timed else []),
    ]
    return "\n".join(lines)


def tables(rows: list[dict], steps: int, rounds: int) -> str:
    """The section's body for experiments that benchmarks/gpu.py measured by this module's children.
    It records no load averages, since gpu.py does not."""
    return section(
        {
            "experiments": rows,
            "steps": steps,
            "rounds": rounds,
            "machine": report.machine_line(),
            "precision": report.precision_line(),
            "command": "python -m benchmarks.gpu --backend=tensorflow",
        }
    )


def command_line(experiments: str, steps: int, rounds: int) -> str:
    """The command that reproduces a run: ``--experiments`` only where it is not the default."""
    chosen = "" if experiments == DEFAULT_EXPERIMENTS else f" --experiments {experiments}"
    return f"python -m benchmarks.run_all{chosen} --steps {steps} --rounds {rounds}"


def main() -> None:
    parser = report.argument_parser(__doc__, leaves="BENCHMARKS.md and the results file")
    parser.add_argument("--experiments", default=DEFAULT_EXPERIMENTS)
    parser.add_argument("--steps", type=int, default=30, help="Steps per setting and round.")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print("RESULT" + json.dumps(measure(args.child, args.steps, args.rounds)))
        return
    load_start = os.getloadavg()[0]
    rows = []
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
    for experiment in args.experiments.split(","):
        completed = subprocess.run(
            [
                sys.executable,
                "-m",
                "benchmarks.run_all",
                "--child",
                experiment,
                "--steps",
                str(args.steps),
                "--rounds",
                str(args.rounds),
            ],
            capture_output=True,
            text=True,
            env=env,
            cwd=report.ROOT,
        )
        lines = [line for line in completed.stdout.splitlines() if line.startswith("RESULT")]
        if completed.returncode or not lines:
            rows.append(
                {"experiment": experiment, "skipped": f"failed: {completed.stderr.strip().splitlines()[-1:]}"}
            )
        else:
            rows.append(json.loads(lines[-1][len("RESULT") :]))
        print(rows[-1], flush=True)
    results = {
        "experiments": rows,
        "steps": args.steps,
        "rounds": args.rounds,
        "precision": report.precision_line(),
        **report.measured(load_start),
        "command": command_line(args.experiments, args.steps, args.rounds),
    }
    if not args.no_write:
        report.save_results("run_all", results)
    report.publish(TITLE, section(results), not args.no_write)


if __name__ == "__main__":
    main()
