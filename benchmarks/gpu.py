"""The one-command GPU benchmark: ABC training speed on an NVIDIA GPU, written to BENCHMARKS.md.

  python -m benchmarks.gpu [--backend=auto|tensorflow|jax] [--data_path=MNIST] [--no_write]

``--backend`` chooses one of two ways to reach the GPU. ``auto`` takes TensorFlow if it sees a GPU,
else JAX if it does.

- ``tensorflow``: our own training path. It runs the suite of ``run_all.py`` for mnist, shapes3d and
  pose_quick: eager loop, ``fit``, steps_per_execution, XLA, mixed float16 and pipeline-fed. It times
  MNIST seconds per epoch against the paper's 47.8 s on a K80, from Table S2. It runs the paper's
  500 MNIST steps, "under 30 s on a V100", as a whole ``train.py`` run in float32, mixed float16
  and XLA. It writes "GPU benchmark (TensorFlow)" and the suite's GPU section.
- ``jax``: for a GPU machine without TensorFlow. Some GPU machines carry JAX, and TensorFlow's GPU
  build cannot be carried to them. It runs the same encoders and ABC loss through Keras 3 on JAX,
  XLA-compiled, in ``gpu_keras.py``. It times steps/s and compile time per precision for mnist,
  shapes3d, pose_quick and the paper's S5 pose model. It also runs the 500 MNIST steps on real
  batches that our TensorFlow MNIST pipeline made beforehand, with ``--make_batches``. It writes
  "GPU benchmark (Keras 3 on JAX)".

On a machine with no GPU it says so and exits 0. It runs in about 5 minutes on an H100.

  python -m benchmarks.gpu --make_batches=.gpu/mnist_batches.npz --data_path=MNIST_DIR

MNIST_DIR: a folder holding the four MNIST IDX files, train-images-idx3-ubyte[.gz] and the others.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile
import time

from benchmarks.report import ROOT, write_section

PAPER_K80_SECONDS_PER_EPOCH = 47.8  # supplement Table S2
PAPER_V100_500_STEPS_SECONDS = 30.0  # supplement S8.2: "under 30 seconds on a Tesla V100"
STEPS_PER_EPOCH = 60_000 / 128  # two stacks of 64 MNIST digits a step
TF_EXPERIMENTS = ("mnist", "shapes3d", "pose_quick")
JAX_EXPERIMENTS = ("mnist", "shapes3d", "pose_quick", "pose_lookup_car")
ENV = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}


def run_child(arguments: list[str], env: dict | None = None) -> dict:
    """Runs ``python ARGUMENTS`` from the repository root and returns its ``RESULT{json}`` line.
    It returns the failure instead when the child fails.
    The child is a benchmark: ``-m benchmarks.NAME ...``."""
    completed = subprocess.run(
        [sys.executable, *arguments], capture_output=True, text=True, env=env or ENV, cwd=ROOT
    )
    lines = [line for line in completed.stdout.splitlines() if line.startswith("RESULT")]
    if completed.returncode or not lines:
        print("\n".join(completed.stderr.strip().splitlines()[-20:]), file=sys.stderr)
        return {"failed": (completed.stderr.strip().splitlines() or ["no output"])[-1]}
    return json.loads(lines[-1][len("RESULT") :])


def run_output(path: str) -> dict:
    """The ``RESULT{json}`` line of a child's saved output."""
    lines = [line for line in open(path).read().splitlines() if line.startswith("RESULT")]
    return json.loads(lines[-1][len("RESULT") :])


def gpu_backend(requested: str) -> str:
    """The backend that will run on a GPU, or "" when none sees one."""
    probes = {
        "tensorflow": "import tensorflow as tf; print(bool(tf.config.list_physical_devices('GPU')))",
        "jax": "import jax; print(jax.default_backend() == 'gpu')",
    }
    for backend in ("tensorflow", "jax") if requested == "auto" else (requested,):
        completed = subprocess.run(
            [sys.executable, "-c", probes[backend]], capture_output=True, text=True, env=ENV
        )
        if completed.stdout.strip().endswith("True"):
            return backend
    return ""


def gpu_name() -> str:
    try:
        completed = subprocess.run(
            ["nvidia-smi", "--query-gpu=name,memory.total,driver_version", "--format=csv,noheader"],
            capture_output=True,
            text=True,
        )
        return completed.stdout.strip().splitlines()[0]
    except (OSError, IndexError):
        return "unknown GPU"


def make_batches(path: str, data_path: str, steps: int = 500) -> None:
    """Writes ``steps`` batches of the mnist preset, as our TensorFlow pipeline draws them, to an npz."""
    import numpy as np

    from abc_tf import data
    from abc_tf.runs import training
    from abc_tf.runs.experiments import get_preset

    config = get_preset("mnist").replace(path=data_path, source="idx" if data_path else "auto")
    iterator = iter(training.make_family_dataset(data.get_family(config.data.family), config, start_step=0))
    batches = [next(iterator) for _ in range(steps)]
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    np.savez_compressed(
        path, **{key: np.stack([b[key].numpy() for b in batches]) for key in ("set_a", "set_b")}
    )
    print(f"Wrote {steps} mnist batches of {config.data.source} data to {path}")


def tensorflow_sections(data_path: str) -> dict[str, str]:
    """{section title: body}: the suite's GPU section and the MNIST timings against the paper."""
    from benchmarks import run_all
    from benchmarks.report import machine_line

    results = []
    for name in TF_EXPERIMENTS:
        result = run_child(["-m", "benchmarks.run_all", "--child", name, "--steps", "30", "--rounds", "2"])
        results.append(
            {"experiment": name, "skipped": f"failed: {result['failed']}"} if "failed" in result else result
        )
    lines = [
        machine_line(),
        f"GPU: {gpu_name()}.",
        "",
        "| MNIST (S4, two stacks of 64) | s/epoch | vs paper's 47.8 s (K80) |",
        "|---|---|---|",
    ]
    mnist = results[0]
    for column in ("fit", "fit_spe10", "fit_xla", "fit_mixed", "fit_mixed_spe10", "fit_mixed_pipeline"):
        if "rates" in mnist:
            seconds = STEPS_PER_EPOCH / mnist["rates"][column]
            lines.append(f"| {column} | {seconds:.1f} | {seconds / PAPER_K80_SECONDS_PER_EPOCH:.2f} |")
    lines += [
        "",
        "The paper's 500 MNIST steps as one `train.py` run (start-up, data, compile and 500 steps):",
        "",
        "| flags | wall s | vs the paper's < 30 s (V100) |",
        "|---|---|---|",
    ]
    for flags in ([], ["--trainer.mixed_precision"], ["--trainer.jit_compile"]):
        with tempfile.TemporaryDirectory() as run_dir:
            command = [
                os.path.join(ROOT, "train.py"),
                "--experiment=mnist",
                "--trainer.steps=500",
                f"--output_dir={run_dir}/run",
                *flags,
                *([f"--data.path={data_path}"] if data_path else []),
            ]
            start = time.perf_counter()
            completed = subprocess.run(
                [sys.executable, *command], capture_output=True, text=True, env=ENV, cwd=ROOT
            )
            wall = time.perf_counter() - start
        shown = " ".join(flags) or "(preset)"
        lines.append(
            f"| {shown} | {wall:.1f} | {wall / PAPER_V100_500_STEPS_SECONDS:.2f} |"
            if completed.returncode == 0
            else f"| {shown} | failed: {completed.stderr.strip().splitlines()[-1:]} | |"
        )
    lines += [
        "",
        "Command: `python -m benchmarks.gpu --backend=tensorflow"
        + (f" --data_path={data_path}`" if data_path else "`"),
    ]
    return {
        "Benchmark suite (GPU)": run_all.tables(results, 30, 2),
        "GPU benchmark (TensorFlow)": "\n".join(lines),
    }


def jax_body(batches: str, seconds: float, experiments: tuple[str, ...] = JAX_EXPERIMENTS) -> str:
    env = {**ENV, "KERAS_BACKEND": "jax"}
    results = []
    for name in experiments:
        arguments = ["-m", "benchmarks.gpu_keras", f"--experiment={name}", f"--seconds={seconds}"]
        if name == "mnist" and batches:
            arguments.append(f"--batches={batches}")
        results.append(run_child(arguments, env) | {"experiment": name})
        print(json.dumps(results[-1]), flush=True)
    measured = [r for r in results if "rates" in r]
    versions = f"JAX {measured[0]['jax']}, Keras {measured[0]['keras']}" if measured else ""
    lines = [
        f"Measured {datetime.date.today().isoformat()} on {gpu_name()}; {versions}.",
        "",
        "TensorFlow is not installed on this project's lent GPU machines and its GPU build cannot be",
        "carried to them, so this section times the same encoders (`models`) and the same ABC loss",
        "(restated in `keras.ops`, checked against `abc_tf.losses` by the tests) on Keras 3's JAX",
        "backend: one jitted step (XLA) of forward, loss, backward and Adam, fed random uint8 sets",
        "already on the device. TensorFlow's `fit` and tf.data are not in these figures. mixed: the",
        "layers compute in float16 or bfloat16 with float32 variables; no loss scaling (timing only).",
        "",
        "| experiment | model | images/step | precision | compile s | steps/s | images/s | peak GPU MB |",
        "|---|---|---|---|---|---|---|---|",
    ]
    from abc_tf.runs.experiments import get_preset

    for result in results:
        if "rates" not in result:
            lines.append(f"| {result['experiment']} | failed: {result.get('failed', '')} | | | | | | |")
            continue
        model = get_preset(result["experiment"]).encoder.architecture
        for rate in result["rates"]:
            lines.append(
                f"| {result['experiment']} | {model} | {rate['images_per_step']} | {rate['precision']} | "
                f"{rate['compile_s']:.1f} | {rate['steps_per_s']:.1f} | {rate['images_per_s']:,.0f} | "
                f"{result['peak_memory_mb']:,.0f} |"
            )
    mnist = next((r for r in results if r["experiment"] == "mnist" and "rates" in r), None)
    if mnist:
        lines += [
            "",
            "MNIST (S4, two stacks of 64, l2sq): seconds per "
            "epoch of 60,000 images against the paper's 47.8 s",
            "on a Tesla K80 (Table S2):",
            "",
            "| precision | s/epoch | vs 47.8 s |",
            "|---|---|---|",
        ]
        for rate in mnist["rates"]:
            seconds = STEPS_PER_EPOCH / rate["steps_per_s"]
            lines.append(
                f"| {rate['precision']} | {seconds:.2f} | {seconds / PAPER_K80_SECONDS_PER_EPOCH:.3f} |"
            )
        for run in mnist.get("real", []):
            lines += [
                "",
                f"The paper's 500 steps on real MNIST ({run['precision']}): {run['wall_s']:.1f} s from "
                "building the model to the last step, compile included (paper: under 30 s on a V100); mean "
                f"loss {run['loss_first_50']:.3f} over the first 50 steps, {run['loss_last_50']:.3f} over "
                "the last 50.",
            ]
    pose = next((r for r in results if r["experiment"] == "pose_lookup_car" and "rates" in r), None)
    if pose:
        best = max(pose["rates"], key=lambda rate: rate["steps_per_s"])
        steps = get_preset("pose_lookup_car").trainer.steps
        lines += [
            "",
            f"The paper's pose run (S5, ResNet50V2 to conv4 + head, 128 px, 512 images a step, {steps:,} "
            f"steps) would take {steps / best['steps_per_s'] / 60:.0f} min at the {best['precision']} rate.",
        ]
    lines += [
        "",
        "Command: `python -m benchmarks.gpu --backend=jax --batches=.gpu/mnist_batches.npz` (batches made "
        "with `--make_batches` from MNIST_DIR, a folder of the four MNIST IDX files).",
    ]
    return "\n".join(lines)


SCALING_RUNS = {"mnist": "float32", "shapes3d": "float32,mixed_bfloat16"}


def scaling_body(results: list[dict]) -> str:
    """The section of ``gpu_keras.py --scaling`` results: whole steps, and the loss alone."""
    from abc_tf.runs.experiments import get_preset

    first = results[0]
    lines = [
        f"Measured {datetime.date.today().isoformat()} on "
        f"{first['device']}; JAX {first['jax']}, Keras {first['keras']}.",
        "",
        'The same step as in "GPU benchmark (Keras 3 on '
        'JAX)" over set sizes N (= M) and pairs per step P, on',
        "random uint8 sets; loss: the step's ABC loss alone "
        "(forward and backward, float32 [P, N, d] embeddings),",
        "and its share of the float32 step. Peak MB: JAX's "
        "peak device memory, rows run smallest batch first.",
        "",
        "| experiment | precision | P | N | images/step | "
        "steps/s | images/s | loss ms | loss share | peak GPU MB |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for result in results:
        loss = {(row["pairs"], row["set_size"]): row["seconds"] for row in result["scaling"]["loss"]}
        for row in result["scaling"]["steps"]:
            if "failed" in row:
                lines.append(
                    f"| {result['experiment']} | {row['precision']} | {row['pairs']} | {row['set_size']} | "
                    f"failed: {row['failed'][:80]} | | | | | |"
                )
                continue
            loss_s = loss.get((row["pairs"], row["set_size"]))
            share = f"{loss_s * row['steps_per_s']:.0%}" if loss_s and row["precision"] == "float32" else ""
            lines.append(
                f"| {result['experiment']} ({get_preset(result['experiment']).encoder.architecture}) | "
                f"{row['precision']} | {row['pairs']} | {row['set_size']} | {row['images_per_step']} | "
                f"{row['steps_per_s']:.1f} | {row['images_per_s']:,.0f} | "
                f"{f'{1e3 * loss_s:.2f}' if loss_s else '-'} | {share} | {row['peak_memory_mb']:,.0f} |"
            )
    lines += [
        "",
        "![images/s against images per step](docs/figures/benchmarks/gpu_training_scaling.png)",
        "",
        "Command: `python -m benchmarks.gpu --backend=jax --scaling` (children: "
        + "; ".join(
            f"`python -m benchmarks.gpu_keras --experiment={name} "
            f"--scaling --precisions={p} --seconds=1 --budget_s=150`"
            for name, p in SCALING_RUNS.items()
        )
        + ")",
    ]
    return "\n".join(lines)


def plot_scaling(results: list[dict]) -> str:
    """Plots images/s against images per step, one line per experiment and precision.
    Returns the PNG's path."""
    from benchmarks.report import FIGURES, log_log_axes

    os.makedirs(FIGURES, exist_ok=True)
    path = os.path.join(FIGURES, "gpu_training_scaling.png")
    with log_log_axes(
        path, "images per step (2 P N)", "images/s", f"ABC training step on {results[0]['device']}"
    ) as axes:
        for result in results:
            for precision in sorted({row["precision"] for row in result["scaling"]["steps"]}):
                rows = sorted(
                    (row["images_per_step"], row["images_per_s"])
                    for row in result["scaling"]["steps"]
                    if row["precision"] == precision and "failed" not in row
                )
                if rows:
                    axes.plot(*zip(*rows), "-o", label=f"{result['experiment']}, {precision}")
    return path


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--backend", choices=("auto", "tensorflow", "jax"), default="auto")
    parser.add_argument(
        "--data_path", default="", help="MNIST IDX folder or .npz (default: the preset's own choice)."
    )
    parser.add_argument("--batches", default="", help="jax: npz of real MNIST batches from --make_batches.")
    parser.add_argument(
        "--make_batches", default="", help="Write 500 mnist batches to this npz and stop (needs TensorFlow)."
    )
    parser.add_argument(
        "--seconds", type=float, default=8.0, help="jax: timed seconds per experiment and precision."
    )
    parser.add_argument("--experiments", default=",".join(JAX_EXPERIMENTS), help="jax: the presets to time.")
    parser.add_argument(
        "--allow_cpu", action="store_true", help="jax: measure on the CPU too (to check this script)."
    )
    parser.add_argument(
        "--scaling", action="store_true", help="jax: steps/s over set sizes and pairs instead."
    )
    parser.add_argument(
        "--scaling_results",
        default="",
        help="Write the scaling section from saved child outputs (comma-separated files).",
    )
    parser.add_argument("--no_write", action="store_true", help="Print only; leave BENCHMARKS.md alone.")
    args = parser.parse_args()
    if args.make_batches:
        make_batches(args.make_batches, args.data_path)
        return
    if args.scaling_results:
        results = [run_output(path) for path in args.scaling_results.split(",")]
        plot_scaling(results)
        write_section("GPU training cost against set size and pairs (Keras 3 on JAX)", scaling_body(results))
        return
    backend = "jax" if args.allow_cpu and args.backend == "jax" else gpu_backend(args.backend)
    if not backend:
        print(
            f"No GPU is visible to {'TensorFlow or JAX' if args.backend == 'auto' else args.backend} on this "
            "machine; the GPU benchmark measured nothing. The CPU figures come from benchmarks/run_all.py."
        )
        return
    if args.scaling:
        env = {**ENV, "KERAS_BACKEND": "jax"}
        results = [
            run_child(
                [
                    "-m",
                    "benchmarks.gpu_keras",
                    f"--experiment={name}",
                    "--scaling",
                    f"--precisions={precisions}",
                    "--seconds=1",
                    "--budget_s=150",
                ],
                env,
            )
            for name, precisions in SCALING_RUNS.items()
        ]
        sections = {"GPU training cost against set size and pairs (Keras 3 on JAX)": scaling_body(results)}
        if not args.no_write:
            plot_scaling(results)
    elif backend == "tensorflow":
        sections = tensorflow_sections(args.data_path)
    else:
        sections = {
            "GPU benchmark (Keras 3 on JAX)": jax_body(
                args.batches, args.seconds, tuple(args.experiments.split(","))
            )
        }
    for title, body in sections.items():
        print(f"## {title}\n\n{body}\n")
        if not args.no_write:
            write_section(title, body)


if __name__ == "__main__":
    main()
