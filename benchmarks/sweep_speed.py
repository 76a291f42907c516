"""Sweeps one after another against side by side on this host, in one run.

- a 4-point grid (``abc_tf grid``) of a small quick preset, few steps and a cut-down evaluation:
  ``--parallel=1`` (one run at a time, TensorFlow's own threads) against the default (as many at
  once as the cores, the cores divided among them);
- ``abc_tf train --seeds=3`` of the same preset, the same two ways.

Each sweep starts in a fresh folder. The ratio is one after another over side by side. From the
side-by-side grid's time per run, an estimate (not a measurement) of Table S1's four grids
(58 points) on N hosts like this one.

Writes docs/figures/benchmarks/sweep_speed.json; the section is written from it.

  python -m benchmarks.sweep_speed [--experiment mnist_vae_quick] [--steps 1000] [--work_dir DIR] [--no_write]
"""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time

from benchmarks import report

FILE = "docs/figures/benchmarks/sweep_speed.json"
TITLE = "Sweeps side by side"
PAPER_POINTS = 9 + 20 + 9 + 20  # Table S1's four grids
HOSTS = (1, 2, 4, 8)
EVALUATE = "--mine_steps=0 --probe_epochs=1 --num_images=64 --disentanglement=none"


def timed(arguments: list[str], log: str) -> float:
    """Seconds ``abc_tf <arguments>`` takes; SystemExit naming the log when it fails."""
    start = time.monotonic()
    with open(log, "w") as handle:
        code = subprocess.call([sys.executable, "-m", "abc_tf", *arguments], stdout=handle, stderr=handle)
    if code:
        raise SystemExit(f"abc_tf {arguments[0]} exited with {code}; see {log}")
    return time.monotonic() - start


def measure(experiment: str, steps: int, work_dir: str) -> dict:
    fixed = f"--trainer.steps={steps} --data.source=procedural"
    grid = [
        "grid",
        f"--experiment={experiment}",
        "--vary=trainer.learning_rate=3e-4,1e-3",
        "--vary=trainer.seed=0,1",
        f"--train_flags={fixed}",
        f"--evaluate_flags={EVALUATE}",
        "--measure=metrics.json:trained/digit_probe_accuracy/no_noise_standardised",
        "--goal=max",
    ]
    seeds = ["train", f"--experiment={experiment}", *fixed.split(), "--seeds=3"]
    sweeps = {}
    for name, arguments in (("grid of 4 points", grid), ("train.py --seeds=3", seeds)):
        times, picks = {}, {}
        for way, flag in (("one after another", "--parallel=1"), ("side by side", "--parallel=0")):
            folder = os.path.join(work_dir, f"{arguments[0]}_{flag[-1]}")
            shutil.rmtree(folder, ignore_errors=True)
            times[way] = timed([*arguments, flag, f"--output_dir={folder}"], f"{folder}.log")
            if arguments[0] == "grid":
                with open(os.path.join(folder, "grid.json")) as handle:
                    picks[way] = json.load(handle)["pick"]["name"]
        sweeps[name] = {"runs": 4 if arguments[0] == "grid" else 3, "seconds": times, "picks": picks}
    return {"experiment": experiment, "steps": steps, "sweeps": sweeps}


def section(results: dict) -> str:
    cores = results["cpu_count"]
    lines = [
        f"`{results['experiment']}`, {results['steps']} steps a run, procedural data, cut-down evaluation: "
        "`--parallel=1` against the default, as many runs at once as cores.",
        "",
        "| sweep | runs | one after another (s) | side by side (s) | ratio |",
        "|---|---|---|---|---|",
    ]
    for name, sweep in results["sweeps"].items():
        one, both = sweep["seconds"]["one after another"], sweep["seconds"]["side by side"]
        lines.append(f"| {name} | {sweep['runs']} | {one:.0f} | {both:.0f} | {one / both:.2f}x |")
    grid = results["sweeps"]["grid of 4 points"]
    picks = grid.get("picks", {})
    if picks:
        lines += [
            "",
            "The grid's picks: " + ", ".join(f"{way} `{name}`" for way, name in picks.items()) + ".",
        ]
    per_run = grid["seconds"]["side by side"] * min(cores, grid["runs"]) / grid["runs"]  # a slot's time
    estimate = ", ".join(
        f"{hosts} host(s) {math.ceil(PAPER_POINTS / (hosts * cores)) * per_run / 60:.0f} min"
        for hosts in HOSTS
    )
    lines += [
        "",
        f"**Estimate, not measured:** Table S1's {PAPER_POINTS} points at this preset's measured "
        f"{per_run:.0f} s a run, {cores} runs at once a host (Ray, `--cpus_per_run=1`): {estimate}. "
        "A paper point trains 5 to 20 minutes on 2 cores: scale by its time.",
        "",
        f"`{results['command']}`; {report.host(results)}",
    ]
    return "\n".join(lines)


def main() -> None:
    parser = report.argument_parser(__doc__)
    parser.add_argument("--experiment", default="mnist_vae_quick", help="The small quick preset.")
    parser.add_argument("--steps", type=int, default=1000, help="Training steps of every run.")
    parser.add_argument("--work_dir", default="", help="Where the sweeps run (default: a temporary folder).")
    parser.add_argument(
        "--table_only", action="store_true", help=f"Write the section from {FILE}; time nothing."
    )
    args = parser.parse_args()
    if args.steps <= 0:
        raise SystemExit("--steps must be positive.")
    if args.table_only:
        results = report.read_results(FILE)
    else:
        load_start = os.getloadavg()[0]
        work_dir = args.work_dir or tempfile.mkdtemp(prefix="sweep_speed_")
        results = measure(args.experiment, args.steps, work_dir)
        results.update(report.measured(load_start))
        results["command"] = (
            f"python -m benchmarks.sweep_speed --experiment {args.experiment} --steps {args.steps}"
        )
        if not args.no_write:
            report.save_results("sweep_speed", results)
    report.publish(TITLE, section(results), not args.no_write)


if __name__ == "__main__":
    main()
