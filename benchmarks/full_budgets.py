"""What the paper-budget pose runs cost on this machine: Table S1's rows ABC, ML-VAE, CC-VAE and LORD.

Each row times the preset's training step as its run trains it, with the preset's own trainer
settings: graph or XLA, and its precision. That time is multiplied by the steps of its budget. The
live pipeline's time per batch is reported too. A run on the CPU adds it where the two share the
cores. These are the reproduction ledger's "not run at the paper's budget" rows, with the hours that
budget would take here.

Each row runs in a fresh process, so the peak memory is its own. It feeds the model one batch of the
preset's pipeline from memory. 2 warm-up steps trace the step. Then ``--rounds`` rounds of
``--steps`` steps give the median seconds per step. LORD is timed in each stage, its step counter
set inside it. Its budget is split at ``--method.stage1_steps``. The pipeline is timed over
``--steps`` batches drawn from the preset's stream after its first, once its banks are built.

Writes docs/figures/benchmarks/full_budgets.json and the section of BENCHMARKS.md from it.

  python -m benchmarks.full_budgets [--steps 3] [--rounds 2] [--no_write]
"""

from __future__ import annotations

import os
import resource
import statistics
import time

from benchmarks import report

TITLE = "Paper-budget pose runs on this machine (Table S1's rows)"
FILE = "docs/figures/benchmarks/full_budgets.json"
# (row, preset, stage: "all", "stage1" or "stage2" of LORD's two).
ROWS = (
    ("ABC", "pose_lookup_car", "all"),
    ("ML-VAE", "pose_ml_vae", "all"),
    ("CC-VAE", "pose_cc_vae", "all"),
    ("LORD stage 1", "pose_lord", "stage1"),
    ("LORD stage 2", "pose_lord", "stage2"),
)


def stage_steps(config, stage: str) -> tuple[int, int]:
    """The first step and the number of steps of ``stage`` in ``config``'s budget, as a pair."""
    if stage == "all":
        return 0, config.trainer.steps
    switch = config.method.stage1_steps
    return (0, switch) if stage == "stage1" else (switch, config.trainer.steps - switch)


def measure(preset: str, stage: str, steps: int, rounds: int) -> dict:
    """One preset's ``stage``: seconds per training step and per pipeline batch, images per step,
    the steps of the budget and the peak RSS in MiB. The step time is the median of the rounds."""
    import tensorflow as tf

    from abc_tf import data
    from abc_tf.runs import experiments
    from abc_tf.runs import training
    from benchmarks import loops

    config = experiments.get_preset(preset)
    start, budget = stage_steps(config, stage)
    family = data.get_family(config.data.family)
    stream = iter(training.make_family_dataset(family, config, start_step=start))
    batch = next(stream)
    began = time.perf_counter()
    for _ in range(steps):
        next(stream)
    pipeline = (time.perf_counter() - began) / steps
    model = training.build_model(config)
    model.optimizer.iterations.assign(start)
    dataset = tf.data.Dataset.from_tensors(batch).repeat()
    model.fit(dataset, epochs=1, steps_per_epoch=2, verbose=0, shuffle=False)  # traces, builds the optimizer
    timer = loops.EpochTimer()
    model.fit(dataset, epochs=rounds, steps_per_epoch=steps, verbose=0, shuffle=False, callbacks=[timer])
    return {
        "step_s": statistics.median(timer.seconds) / steps,
        "pipeline_s": pipeline,
        "images": int(batch["set_a"].shape[0] * batch["set_a"].shape[1]),
        "budget": budget,
        "jit_compile": config.trainer.jit_compile == "true",  # auto's timing is a fit's, not this loop's
        "mixed": config.trainer.mixed_precision,
        "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def hours(steps: int, seconds: float) -> str:
    return f"{steps * seconds / 3600:.1f}"


def yes_no(flag: bool) -> str:
    return "yes" if flag else "no"


def lord_hours(rows: list[dict]) -> float:
    """Hours of LORD's whole budget: both stages, each at its step + pipeline time."""
    lord = [row for row in rows if row["preset"] == "pose_lord"]
    return sum(row["budget"] * (row["step_s"] + row["pipeline_s"]) for row in lord) / 3600


def section(results: dict) -> str:
    """The section of BENCHMARKS.md, from the results file alone."""
    steps, rounds = results["steps"], results["rounds"]
    lines = [
        f"Each Table S1 preset as its run trains it: median s/step of {rounds} rounds of {steps} steps; "
        "hours at step + pipeline time.",
        "",
        "| row | step s | budget steps | hours |",
        "|---|---|---|---|",
    ]
    for row in results["rows"]:
        step, pipeline, budget = row["step_s"], row["pipeline_s"], row["budget"]
        lines.append(
            f"| {row['row']} (`{row['preset']}`) | {step:.2f} | {budget:,} | "
            f"{hours(budget, step + pipeline)} |"
        )
    lines += ["", f"`{results['command']}`, {report.host(results)}"]
    if any(row["preset"] == "pose_lord" for row in results["rows"]):
        lord = lord_hours(results["rows"])
        lines += ["", f"LORD's two stages together take {lord:.0f} hours ({lord / 24:.1f} days)."]
    return "\n".join(lines)


def main() -> None:
    args = report.rounds_arguments(
        __doc__, steps=3, steps_help="Timed steps (and pipeline batches) per round."
    )
    if args.steps <= 0 or args.rounds <= 0:
        raise SystemExit("--steps and --rounds must be positive.")
    # One row in a fresh process: its own peak memory.
    if report.answer_child(args.child, {}, lambda child: measure(*child.split(":"), args.steps, args.rounds)):
        return
    load_start = os.getloadavg()[0]
    measured = report.run_children(
        "benchmarks.full_budgets",
        {row: f"{preset}:{stage}" for row, preset, stage in ROWS},
        ["--steps", str(args.steps), "--rounds", str(args.rounds)],
    )
    rows = [{"row": row, "preset": preset, "stage": stage, **measured[row]} for row, preset, stage in ROWS]
    results = {
        "steps": args.steps,
        "rounds": args.rounds,
        "rows": rows,
        "precision": report.precision_line(),
        **report.measured(load_start),
        "command": f"python -m benchmarks.full_budgets --steps {args.steps} --rounds {args.rounds}",
    }
    report.publish(TITLE, section(results), write=not args.no_write)
    if not args.no_write:
        report.save_results("full_budgets", results)


if __name__ == "__main__":
    main()
