"""Seconds per epoch of MNIST digit-style training, next to the paper's 47.8 s/epoch on a Tesla K80.

An epoch is 60,000 training images seen. A step sees two stacks of 64, that is 128 images, so an
epoch is 468.75 steps. It is measured on the real training path. That path is the ``mnist`` preset's
data pipeline from ``abc_tf.data.mnist.family.make_dataset``, its encoder, and the compiled
``AbcModel.fit`` of ``abc_tf.runs.training``. A warm-up traces the step first. The data pipeline
alone is timed too, to show whether it limits training.

  python -m benchmarks.mnist_epoch [--data_path=/path/to/mnist] [--steps=150] [--repeats=3] [--no_write]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import keras

from abc_tf.runs import training
from abc_tf.runs.experiments import get_preset
from abc_tf.data.mnist import family as mnist
from abc_tf.data.mnist import sources as mnist_sources
from benchmarks import report
from benchmarks.report import machine_line, save_results, write_section

TITLE = "MNIST epoch time"
FILE = "docs/figures/benchmarks/mnist_epoch.json"
IMAGES_PER_EPOCH = 60_000
PAPER_SECONDS_PER_EPOCH_K80 = 47.8  # supplement Table S2


def seconds_per_step(config, steps: int, repeats: int) -> list[float]:
    """Wall seconds per training step, one figure per repeat of ``steps`` steps."""
    dataset = mnist.make_dataset(config, seed=config.trainer.seed)
    model = training.build_model(config)
    per_call = training.steps_per_execution(config)  # what the trainer runs (auto by default)
    model.steps_per_execution = per_call
    warmup = 2 * per_call * max(1, 10 // per_call)
    model.fit(
        dataset, epochs=1, steps_per_epoch=warmup, verbose=0, shuffle=False
    )  # traces, warms the pipeline
    steps = max(per_call, steps - steps % per_call)  # whole compiled calls
    out = []
    for _ in range(repeats):
        start = time.perf_counter()
        model.fit(dataset, epochs=1, steps_per_epoch=steps, verbose=0, shuffle=False)
        out.append((time.perf_counter() - start) / steps)
    keras.mixed_precision.set_global_policy("float32")
    return out


def pipeline_seconds_per_batch(config, batches: int) -> float:
    iterator = iter(mnist.make_dataset(config, seed=config.trainer.seed))
    for _ in range(10):
        next(iterator)
    start = time.perf_counter()
    for _ in range(batches):
        next(iterator)
    return (time.perf_counter() - start) / batches


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--data_path", default="", help="MNIST IDX directory or .npz (default: the preset's auto choice)."
    )
    parser.add_argument("--steps", type=int, default=150, help="Timed steps per repeat.")
    parser.add_argument("--repeats", type=int, default=3, help="Timed repeats (the median is reported).")
    parser.add_argument("--no_write", action="store_true", help="Print only; leave BENCHMARKS.md alone.")
    args = parser.parse_args()
    if args.steps <= 0 or args.repeats <= 0:
        raise SystemExit("--steps and --repeats must be positive.")

    base = get_preset("mnist").replace(path=args.data_path)
    source = mnist_sources.load_mnist(base).source
    steps_per_epoch = IMAGES_PER_EPOCH / (2 * base.batch.set_size * base.batch.pairs_per_step)
    rows = []
    for label, config in (
        (f"preset (float32, no XLA; auto: {training.steps_per_execution(base)} steps a call)", base),
        ("steps_per_execution=1", base.replace(steps_per_execution=1)),
        ("jit_compile=True (XLA)", base.replace(jit_compile=True)),
    ):
        per_step = seconds_per_step(config, args.steps, args.repeats)
        median = statistics.median(per_step)
        rows.append((label, median * 1000, median * steps_per_epoch, min(per_step) * steps_per_epoch))
        print(f"{label}: {median * 1000:.1f} ms/step, {median * steps_per_epoch:.1f} s/epoch", flush=True)
    pipeline = pipeline_seconds_per_batch(base, 200)
    print(f"data pipeline alone: {pipeline * 1000:.2f} ms/batch", flush=True)

    # The documents name the user's MNIST folder MNIST_DIR, never a path of the measuring
    # machine.
    if args.data_path:
        source = source.replace(os.path.abspath(args.data_path), "MNIST_DIR") + (
            "; MNIST_DIR: a folder holding the four MNIST IDX files, "
            "`train-images-idx3-ubyte[.gz]` and the others"
        )
    command = "python -m benchmarks.mnist_epoch" + (" --data_path=MNIST_DIR" if args.data_path else "")
    command += f" --steps={args.steps} --repeats={args.repeats}"
    results = {
        "command": command,
        "steps_per_epoch": steps_per_epoch,
        "paper_seconds_per_epoch": PAPER_SECONDS_PER_EPOCH_K80,
        "rows": [
            {
                "configuration": label,
                "ms_per_step": ms,
                "seconds_per_epoch": epoch,
                "best_seconds_per_epoch": best,
                "over_paper": epoch / PAPER_SECONDS_PER_EPOCH_K80,
            }
            for label, ms, epoch, best in rows
        ],
        "pipeline_ms_per_batch": pipeline * 1000,
        "load": os.getloadavg(),
        "machine": machine_line(),
        "data": source,
        "set_size": base.batch.set_size,
        "embedding_dim": base.encoder.embedding_dim,
        "steps": args.steps,
        "repeats": args.repeats,
    }
    body = section(results)
    if not args.no_write:
        write_section(TITLE, body)
        save_results("mnist_epoch", results)
    print(body)


def section(results: dict) -> str:
    """The section of BENCHMARKS.md, from the results file alone."""
    paper = results["paper_seconds_per_epoch"]
    table = "\n".join(
        f"| {row['configuration']} | {row['ms_per_step']:.1f} | {row['seconds_per_epoch']:.1f} | "
        f"{row['over_paper']:.2f} |"
        for row in results["rows"]
    )
    load = ", ".join(f"{value:.1f}" for value in results["load"])
    return f"""`fit` on the live `mnist` pipeline; median of {results["repeats"]} repeats of \
{results["steps"]} steps.

| configuration | ms/step | s/epoch | / paper's {paper} s (K80) |
|---|---|---|---|
{table}

`{results["command"]}`, {report.host(results, f"load at the end (1, 5, 15 min) {load}")}

{other_host(results)}"""


def other_host(results: dict) -> str:
    """Why the preset's step here is slower than in the Table S2 run (benchmarks/baselines_epoch.py):
    the same code path on a slower host, shown by the float32 matmul rate and the bare compiled step
    that other benchmarks measured on each date, each linked to its file."""
    name = "docs/figures/benchmarks/{}.json".format
    files = {
        key: report.read_results(name(key))
        for key in ("method_speed", "run_all", "default_speed", "baselines_epoch")
    }
    date = {key: report.MACHINE.match(files[key]["machine"])["date"] for key in ("method_speed", "run_all")}
    abc = files["baselines_epoch"]["rows"][0]
    abc_ms = abc["wall_seconds"] / abc["steps_per_epoch"] * 1000
    bare = files["default_speed"]["rows"][1]["steps_per_s"]
    slow = f"[{files['method_speed']['rows'][0]['matmul_gflops_before']:.1f}]"
    slow += f"({name('method_speed')}#/rows/0/matmul_gflops_before)"
    fast = f"[{files['run_all']['experiments'][2]['matmul_gflops']:.1f}]"
    fast += f"({name('run_all')}#/experiments/2/matmul_gflops)"
    epoch = f"[{abc['wall_seconds']:.1f}]({name('baselines_epoch')}#/rows/0/wall_seconds)"
    ratio = results["rows"][0]["ms_per_step"] / abc_ms
    return (
        "The Table S2 section below times the same path (`fit`, float32, no XLA, "
        f"{abc['steps_per_execution']} steps a call; the pipeline costs "
        f"{results['pipeline_ms_per_batch']:.2f} ms) {ratio:.1f}x faster: the host differs, and was busier. "
        f"On {date['method_speed']} the float32 matmul ran at {slow} GFLOP/s and a bare compiled step took "
        f"{1000 / bare:.1f} ms (`default_speed.json`); on {date['run_all']}, {fast} GFLOP/s. The preset's "
        f"step as `train.py` runs it on the current host is {abc_ms:.1f} ms ({epoch} s an epoch)."
    )


if __name__ == "__main__":
    main()
