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
  "GPU benchmark (Keras 3 on JAX)". With ``--scaling`` it times steps/s and the loss alone over set
  sizes and pairs per step instead, and writes "GPU training cost against set size and pairs
  (Keras 3 on JAX)".

The two JAX sections are written from one results file, docs/figures/benchmarks/gpu.json. A plain
run updates its "benchmark" part, a ``--scaling`` run its "scaling" part; each keeps the other's.

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
import textwrap
import time

from benchmarks import report
from benchmarks.report import ROOT, write_section

PAPER_K80_SECONDS_PER_EPOCH = 47.8  # supplement Table S2
PAPER_V100_500_STEPS_SECONDS = 30.0  # supplement S8.2: "under 30 seconds on a Tesla V100"
STEPS_PER_EPOCH = 60_000 / 128  # two stacks of 64 MNIST digits a step
TF_EXPERIMENTS = ("mnist", "shapes3d", "pose_quick")
JAX_EXPERIMENTS = ("mnist", "shapes3d", "pose_quick", "pose_lookup_car")
ENV = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
TITLE = "GPU benchmark (Keras 3 on JAX)"
SCALING_TITLE = "GPU training cost against set size and pairs (Keras 3 on JAX)"
FILE = "docs/figures/benchmarks/gpu.json"
MNIST_EPOCH_IMAGES = 60_000


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
    for flags in ([], ["--trainer.mixed_precision"], ["--trainer.jit_compile=true"]):
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


def jax_child(experiment: str, arguments: list[str]) -> dict:
    """The result of ``python -m benchmarks.gpu_keras --experiment=EXPERIMENT ARGUMENTS`` on Keras's
    JAX backend, or why it failed. Either way it names its experiment and its command."""
    arguments = ["-m", "benchmarks.gpu_keras", f"--experiment={experiment}", *arguments]
    result = run_child(arguments, {**ENV, "KERAS_BACKEND": "jax"})
    result = {"experiment": experiment, "command": "python " + " ".join(arguments), **result}
    print(json.dumps(result), flush=True)
    return result


def benchmark_run(batches: str, seconds: float, experiments: tuple[str, ...]) -> dict:
    """The results' "benchmark" part: each experiment timed in its own child, ``seconds`` a precision.
    With ``batches``, the mnist child also runs the paper's 500 steps on those real batches."""
    children = [
        jax_child(
            name, [f"--seconds={seconds}", *([f"--batches={batches}"] if name == "mnist" and batches else [])]
        )
        for name in experiments
    ]
    return {"children": children, "seconds": seconds, "batches": batches}


SCALING_RUNS = {"mnist": "float32", "shapes3d": "float32,mixed_bfloat16"}  # experiment: its precisions


def scaling_run() -> dict:
    """The results' "scaling" part: steps/s and the loss alone over set sizes and pairs.
    One child an experiment."""
    return {
        "children": [
            jax_child(name, ["--scaling", f"--precisions={precisions}", "--seconds=1", "--budget_s=150"])
            for name, precisions in SCALING_RUNS.items()
        ]
    }


def jax_machine_line(children: list[dict]) -> str:
    """The machine line of the JAX sections: the date, GPU, JAX and Keras the first child that ran reports.
    report.machine_line names TensorFlow's devices, and the GPU machines have no TensorFlow."""
    ran = [child for child in children if "failed" not in child]
    if not ran:
        return f"Measured {datetime.date.today().isoformat()} on {gpu_name()}; every child failed."
    first = ran[0]
    return f"Measured {first['date']} on {first['gpu']}; JAX {first['jax']}, Keras {first['keras']}."


def host(children: list[dict], load_start: float) -> dict:
    """What a section states about its run besides the figures, as report.measured keeps it: the
    machine line of the children, the cores, and the 1-minute load average at ``load_start`` and now."""
    return {
        "machine": jax_machine_line(children),
        "load": [load_start, os.getloadavg()[0]],
        "cpu_count": os.cpu_count(),
    }


def with_run(part: str, run: dict, root: str | None = None) -> dict:
    """The results file's contents under ``root`` (the repository) with ``run`` as its ``part``,
    "benchmark" or "scaling". The other part stays as the file has it: separate commands measure them."""
    root = root or ROOT
    results = report.read_results(FILE, root) if os.path.exists(os.path.join(root, FILE)) else {}
    return {**results, part: run}


def publish_run(part: str, run: dict, write: bool) -> None:
    """Prints the section of ``run``; with ``write``, it also stores the run in FILE as its ``part``,
    draws the scaling figure and writes the section to BENCHMARKS.md."""
    results = with_run(part, run)
    if write:
        report.save_results("gpu", results)
    title = PARTS[part]
    draw = (lambda: plot_scaling(run)) if part == "scaling" else None
    report.publish(title, SECTIONS[title](results), write, draw)


def paragraph(text: str) -> str:
    """``text`` wrapped at 100 characters, as the other sections' prose is."""
    return textwrap.fill(text, 100, break_long_words=False, break_on_hyphens=False)


def cell(text: str) -> str:
    """``text`` safe in a Markdown table cell."""
    return str(text).replace("|", "/").replace("\n", " ")


def host_lines(run: dict) -> list[str]:
    """The machine line, then the load averages where the run has them (not a section written from
    saved child outputs, ``--scaling_results``)."""
    return [run["machine"], *([report.load_text(run, cores="")] if "load" in run else [])]


def not_measured(command: str) -> str:
    return f"Not measured yet; on a GPU machine with JAX: `{command}`."


def layout(rate: dict) -> str:
    """How a step's images are laid out: "two sets of 64", or "4 pairs of sets of 32"."""
    if rate["pairs"] == 1:
        return f"two sets of {rate['set_size']}"
    return f"{rate['pairs']} pairs of sets of {rate['set_size']}"


def mnist_lines(mnist: dict) -> list[str]:
    """Seconds per MNIST epoch against the paper's K80, and the 500 steps on real batches if they ran."""
    real = {run["precision"]: run for run in mnist.get("real", [])}
    steps = next(iter(real.values()), {}).get("steps", 0)
    intro = (
        f"MNIST ({mnist['model'].upper()}, {layout(mnist['rates'][0])}, {mnist['similarity']}): seconds per "
        f"epoch of {MNIST_EPOCH_IMAGES:,} images against the paper's {PAPER_K80_SECONDS_PER_EPOCH} s on a "
        "Tesla K80 (Table S2)"
    )
    if real:
        intro += (
            f", and the paper's {steps} steps on real MNIST, from building the model to the last step, "
            f"compile included (paper, S8.2: under {PAPER_V100_500_STEPS_SECONDS:.0f} s on a V100)"
        )
    lines = [
        paragraph(intro + ":"),
        "",
        f"| precision | s/epoch | vs {PAPER_K80_SECONDS_PER_EPOCH} s |"
        + (f" {steps} steps: s | mean loss, first 50 steps | mean loss, last 50 steps |" if real else ""),
        "|---|---|---|" + ("---|---|---|" if real else ""),
    ]
    for rate in mnist["rates"]:
        seconds = MNIST_EPOCH_IMAGES / rate["images_per_s"]
        row = f"| {rate['precision']} | {seconds:.2f} | {seconds / PAPER_K80_SECONDS_PER_EPOCH:.3f} |"
        if real:
            run = real.get(rate["precision"])
            row += (
                f" {run['wall_s']:.1f} | {run['loss_first_50']:.3f} | {run['loss_last_50']:.3f} |"
                if run
                else " - | - | - |"
            )
        lines.append(row)
    return lines


def pose_sentence(pose: dict | None) -> str:
    """How long the paper's pose run would take at the best rate measured, or why there is none."""
    if pose is None or "failed" in pose:
        state = "was not in this run" if pose is None else "failed in this run (its row above)"
        return f"S5 (`pose_lookup_car`, the supplement's ResNet50V2) {state}."
    best = max(pose["rates"], key=lambda rate: rate["steps_per_s"])
    return paragraph(
        f"The paper's pose run ({pose['model'].upper()}, ResNet50V2 to conv4 + head, "
        f"{pose['image_shape'][0]} px, {best['images_per_step']} images a step, {pose['preset_steps']:,} "
        "steps) would take "
        f"{pose['preset_steps'] / best['steps_per_s'] / 60:.0f} min at the {best['precision']} rate."
    )


def section(results: dict) -> str:
    """The "GPU benchmark (Keras 3 on JAX)" section, from the results' "benchmark" part alone."""
    run = results.get("benchmark")
    if run is None:
        return not_measured("python -m benchmarks.gpu --backend=jax")
    lines = [
        *host_lines(run),
        "",
        paragraph(
            "TensorFlow is not installed on the lent GPU machines, so this section times the same encoders "
            "(`models`) and the same ABC loss (restated in `keras.ops`, checked against `abc_tf.losses` by "
            "the tests) on Keras 3's JAX backend: one jitted step (XLA) of forward, loss, backward and Adam, "
            "fed random uint8 sets already on the device. TensorFlow's `fit` and tf.data are not in these "
            "figures. mixed: the layers compute in float16 or bfloat16 with float32 variables; no loss "
            f"scaling (timing only). Each experiment runs {run['seconds']:g} s a precision after compiling, "
            "in a process of its own, so its peak GPU memory is its own (the largest of its precisions)."
        ),
        "",
        "| experiment | model | images/step | precision | compile s | steps/s | images/s | peak GPU MB |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for child in run["children"]:
        if "failed" in child:
            lines.append(f"| {child['experiment']} | failed: {cell(child['failed'])} | | | | | | |")
            continue
        for rate in child["rates"]:
            lines.append(
                f"| {child['experiment']} | {child['model']} | {rate['images_per_step']} | "
                f"{rate['precision']} | {rate['compile_s']:.1f} | {rate['steps_per_s']:.1f} | "
                f"{rate['images_per_s']:,.0f} | "
                f"{child['peak_memory_mb']:,.0f} |"
            )
    by_experiment = {child["experiment"]: child for child in run["children"]}
    mnist = by_experiment.get("mnist")
    if mnist and "failed" not in mnist:
        lines += ["", *mnist_lines(mnist)]
    lines += ["", pose_sentence(by_experiment.get("pose_lookup_car")), ""]
    made = " (batches made with `--make_batches` from MNIST_DIR, a folder of the four MNIST IDX files)"
    lines.append(f"Command: `{run['command']}`{made if run['batches'] else ''}.")
    return "\n".join(lines)


# Steps/s of one image count's splits this far apart or closer: how the images are split does not count.
SPLIT_TOLERANCE = 0.05
MINOR_LOSS_SHARE = 0.10  # a loss at most this share of the step leaves the encoder setting the cost


def label(child: dict) -> str:
    return f"{child['model'].upper()}, d={child['embedding_dim']}"


def float32_rows(child: dict) -> list[dict]:
    """A scaling child's measured float32 step rows, smallest batch first."""
    rows = [row for row in child["scaling"]["steps"] if "failed" not in row and row["precision"] == "float32"]
    return sorted(rows, key=lambda row: row["images_per_step"])


def loss_share(loss_seconds: float, row: dict) -> float:
    """The loss alone's share of a step: its seconds over the step's."""
    return loss_seconds * row["steps_per_s"]


def losses_of(child: dict) -> dict[tuple[int, int], float]:
    """{(P, N): seconds} of a scaling child's loss alone."""
    return {(row["pairs"], row["set_size"]): row["seconds"] for row in child["scaling"]["loss"]}


def widest_split(rows: list[dict]) -> list[dict]:
    """The rows of the image count split the most ways into P and N (the largest count on a tie)."""
    by_images: dict[int, list[dict]] = {}
    for row in rows:
        by_images.setdefault(row["images_per_step"], []).append(row)
    widest = max(by_images, key=lambda images: (len(by_images[images]), images), default=None)
    return by_images[widest] if widest is not None and len(by_images[widest]) > 1 else []


def split_sentence(ran: list[dict]) -> list[str]:
    """Whether one image count costs the same however it is split into P sets of N, each child's."""
    clauses, spreads, previous = [], [], ""
    for child in ran:
        rows = widest_split(float32_rows(child))
        if not rows:
            continue
        rates = [row["steps_per_s"] for row in rows]
        spreads.append(max(rates) / min(rates) - 1)
        split = f"{rows[0]['images_per_step']:,} images as " + " / ".join(
            f"P={row['pairs']}, N={row['set_size']}" for row in rows
        )
        shown = " / ".join(f"{rate:.1f}" for rate in rates)
        shown = shown if split == previous else f"{split} run at {shown} steps/s"
        clauses.append(f"{shown} ({label(child)}; {spreads[-1]:.0%} apart)")
        previous = split
    if not clauses:
        return []
    verdict = "hardly depends" if max(spreads) <= SPLIT_TOLERANCE else "depends"
    return [
        f"at the same number of images per step the cost {verdict} on how they are split into sets: "
        + " and ".join(clauses)
        + "."
    ]


def loss_sentence(ran: list[dict]) -> list[str]:
    """The largest share of a float32 step the loss alone takes, and what sets the cost then."""
    shares = [
        (loss_share(losses[(row["pairs"], row["set_size"])], row), child, row)
        for child in ran
        for losses in [losses_of(child)]
        for row in float32_rows(child)
        if (row["pairs"], row["set_size"]) in losses
    ]
    if not shares:
        return []
    share, child, row = max(shares, key=lambda entry: entry[0])
    largest = max(shared["set_size"] for _, _, shared in shares)
    return [
        f"The loss alone is at most {share:.0%} of a float32 step ({label(child)}, P={row['pairs']}, "
        f"N={row['set_size']})"
        + (
            f", so up to N={largest:,} the encoder, linear in images, sets the cost."
            if share <= MINOR_LOSS_SHARE
            else ": there the loss's O(P N M d) part weighs in the step."
        )
    ]


def batch_sentences(ran: list[dict]) -> list[str]:
    """Throughput and XLA's compile time at each child's smallest and largest float32 batch."""
    ends = [(child, float32_rows(child)) for child in ran]
    ends = [
        (child, rows[0], rows[-1])
        for child, rows in ends
        if rows and rows[-1]["images_per_step"] > rows[0]["images_per_step"]
    ]
    if not ends:
        return []
    detail = "; ".join(
        f"{label(child)}: {first['images_per_s'] / 1e3:,.0f}k images/s at {first['images_per_step']:,} "
        f"images a step, {last['images_per_s'] / 1e3:,.0f}k at {last['images_per_step']:,}"
        for child, first, last in ends
    )
    if all(last["images_per_s"] > first["images_per_s"] for _, first, last in ends):
        throughput = (
            f"Throughput rises with the batch ({detail}): small steps leave the GPU idle between kernels."
        )
    else:
        throughput = f"Throughput in float32: {detail}."
    compile_times = "; ".join(
        f"{label(child)}: {first['compile_s']:.0f} s at {first['images_per_step']:,} images, "
        f"{last['compile_s']:.0f} s at {last['images_per_step']:,}"
        for child, first, last in ends
    )
    return [throughput, f"XLA's compile time, float32: {compile_times}."]


def memory_sentence(ran: list[dict]) -> list[str]:
    """Peak memory per added image between each child's two largest float32 batches."""
    clauses = []
    for child in ran:
        peaks: dict[int, float] = {}
        for row in float32_rows(child):
            peaks[row["images_per_step"]] = max(peaks.get(row["images_per_step"], 0.0), row["peak_memory_mb"])
        if len(peaks) > 1:
            smaller, larger = sorted(peaks)[-2:]
            per_image = (peaks[larger] - peaks[smaller]) / (larger - smaller)
            clauses.append(f"{per_image:.3g} MB from {smaller:,} to {larger:,} images ({label(child)})")
    return [f"Peak memory in float32, per added image: {' and '.join(clauses)}."] if clauses else []


def rows_of(count: int, child: dict) -> str:
    return f"{count} {child['experiment']} row{'' if count == 1 else 's'}"


def missing_paragraph(children: list[dict]) -> list[str]:
    """What the run did not measure: failed children, rows skipped by the time budget, failed rows."""
    missing = []
    for child in children:
        if "failed" in child:
            missing.append(f"the {child['experiment']} child failed ({cell(child['failed'])})")
            continue
        rows = [row for row in child["scaling"]["steps"] if "failed" in row]
        skipped = sum(row["failed"].startswith("skipped") for row in rows)
        if skipped:
            budget = child["scaling"]["budget_s"]
            missing.append(f"{rows_of(skipped, child)}, skipped once its {budget:g} s budget had passed")
        if len(rows) > skipped:
            missing.append(f"{rows_of(len(rows) - skipped, child)} that failed (the table says why)")
    if not missing:
        return []
    return [
        "",
        paragraph(
            f"Not measured: {'; '.join(missing)}. `--budget_s` bounds each child, which times the loss first "
            "and skips the rows left after it."
        ),
    ]


def scaling_reading(children: list[dict]) -> list[str]:
    """The reading of the scaling table: each sentence computed from the rows it cites."""
    ran = [child for child in children if "failed" not in child]
    sentences = split_sentence(ran) + loss_sentence(ran) + batch_sentences(ran) + memory_sentence(ran)
    reading = [paragraph("Reading: " + " ".join(sentences))] if sentences else []
    return reading + missing_paragraph(children)


def scaling_section(results: dict) -> str:
    """The "GPU training cost against set size and pairs (Keras 3 on JAX)" section, from the results'
    "scaling" part alone: whole steps, and the loss alone."""
    run = results.get("scaling")
    if run is None:
        return not_measured("python -m benchmarks.gpu --backend=jax --scaling")
    lines = [
        *host_lines(run),
        "",
        paragraph(
            'The same step as in "GPU benchmark (Keras 3 on JAX)" over set sizes N (= M) and pairs per '
            "step P, on random uint8 sets. loss ms: the step's ABC loss alone (forward and backward, float32 "
            "[P, N, d] embeddings); loss share: its share of the float32 step, loss ms times steps/s. Peak "
            "MB: JAX's peak device memory so far in the child. float32 runs first, smallest batch first, so "
            "a float32 row's peak is its own; a later precision's rows start from the float32 peak."
        ),
        "",
        "| experiment | precision | P | N | images/step | steps/s | images/s | loss ms | loss share "
        "| peak GPU MB |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for child in run["children"]:
        if "failed" in child:
            lines.append(f"| {child['experiment']} | failed: {cell(child['failed'])} | | | | | | | | |")
            continue
        losses = losses_of(child)
        for row in child["scaling"]["steps"]:
            if "failed" in row:
                lines.append(
                    f"| {child['experiment']} | {row['precision']} | {row['pairs']} | {row['set_size']} | "
                    f"failed: {cell(row['failed'][:80])} | | | | | |"
                )
                continue
            loss_s = losses.get((row["pairs"], row["set_size"]))
            share = f"{loss_share(loss_s, row):.0%}" if loss_s and row["precision"] == "float32" else ""
            lines.append(
                f"| {child['experiment']} ({child['model']}) | {row['precision']} | {row['pairs']} | "
                f"{row['set_size']} | {row['images_per_step']} | {row['steps_per_s']:.1f} | "
                f"{row['images_per_s']:,.0f} | {f'{1e3 * loss_s:.2f}' if loss_s else '-'} | {share} | "
                f"{row['peak_memory_mb']:,.0f} |"
            )
    lines += [
        "",
        "![images/s against images per step](docs/figures/benchmarks/gpu_training_scaling.png)",
        "",
        f"Command: `{run['command']}` (children: "
        + "; ".join(f"`{child['command']}`" for child in run["children"])
        + ")",
        "",
        *scaling_reading(run["children"]),
    ]
    return "\n".join(lines)


SECTIONS = {TITLE: section, SCALING_TITLE: scaling_section}
PARTS = {"benchmark": TITLE, "scaling": SCALING_TITLE}  # the results file's part: the section written from it


def plot_scaling(run: dict) -> str:
    """Plots images/s against images per step of the results' "scaling" part, one line per experiment
    and precision. Returns the PNG's path."""
    from benchmarks.report import FIGURES, log_log_axes

    ran = [child for child in run["children"] if "failed" not in child]
    os.makedirs(FIGURES, exist_ok=True)
    path = os.path.join(FIGURES, "gpu_training_scaling.png")
    device = ran[0]["device"] if ran else "a GPU"
    with log_log_axes(path, "images per step (2 P N)", "images/s", f"ABC training step on {device}") as axes:
        for child in ran:
            for precision in sorted({row["precision"] for row in child["scaling"]["steps"]}):
                rows = sorted(
                    (row["images_per_step"], row["images_per_s"])
                    for row in child["scaling"]["steps"]
                    if row["precision"] == precision and "failed" not in row
                )
                if rows:
                    axes.plot(*zip(*rows), "-o", label=f"{child['experiment']}, {precision}")
    return path


def benchmark_command(args: argparse.Namespace) -> str:
    """The command of a plain JAX run, with the arguments it used."""
    command = "python -m benchmarks.gpu --backend=jax"
    if args.batches:
        command += f" --batches={args.batches}"
    command += f" --seconds={args.seconds:g}"
    if args.experiments != ",".join(JAX_EXPERIMENTS):
        command += f" --experiments={args.experiments}"
    return command + (" --allow_cpu" if args.allow_cpu else "")


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
        help="Write the scaling section from saved gpu_keras.py --scaling outputs (comma-separated files).",
    )
    parser.add_argument(
        "--no_write",
        action="store_true",
        help=f"Print only; leave BENCHMARKS.md, {FILE} and the figure alone.",
    )
    args = parser.parse_args()
    if args.make_batches:
        make_batches(args.make_batches, args.data_path)
        return
    if args.scaling_results:
        children = [run_output(path) for path in args.scaling_results.split(",")]
        command = f"python -m benchmarks.gpu --scaling_results={args.scaling_results}"
        publish_run(
            "scaling",
            {"children": children, "machine": jax_machine_line(children), "command": command},
            not args.no_write,
        )
        return
    backend = "jax" if args.allow_cpu and args.backend == "jax" else gpu_backend(args.backend)
    if not backend:
        print(
            f"No GPU is visible to {'TensorFlow or JAX' if args.backend == 'auto' else args.backend} on this "
            "machine; the GPU benchmark measured nothing. The CPU figures come from benchmarks/run_all.py."
        )
        return
    if backend == "tensorflow":
        for title, body in tensorflow_sections(args.data_path).items():
            print(f"## {title}\n\n{body}\n")
            if not args.no_write:
                write_section(title, body)
        return
    load_start = os.getloadavg()[0]
    if args.scaling:
        part, run = "scaling", scaling_run()
        run["command"] = "python -m benchmarks.gpu --backend=jax --scaling" + (
            " --allow_cpu" if args.allow_cpu else ""
        )
    else:
        part, run = "benchmark", benchmark_run(args.batches, args.seconds, tuple(args.experiments.split(",")))
        run["command"] = benchmark_command(args)
    run.update(host(run["children"], load_start))
    publish_run(part, run, not args.no_write)


if __name__ == "__main__":
    main()
