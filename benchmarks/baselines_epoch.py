"""Seconds per MNIST epoch of ABC and the paper's VAE baselines in one run, as the ABC
supplement's Table S2 gives them (Tesla K80: ABC 47.8 s, Sanchez et al. 70.2 s, CC-VAE 150.2 s;
ML-VAE is not in it).

Each method runs its paper preset (``mnist``, ``mnist_ml_vae``, ``mnist_cc_vae``) through its
compiled ``fit``, in float32 without XLA and with the steps per call the trainer chooses. A
repeat times one whole epoch of each method, the three in turn, so a change of load touches
every method alike. The step runs on 8 batches of the family's pipeline held in memory, so the
figure is the method's own step; the live pipeline's time per batch is printed beside them.

The host's quietness is measured, not assumed: the 1-minute load average before the first
model is built, and the CPU time that other processes took during the timed epochs
(``/proc/stat`` less this process), in cores.

An epoch is counted as each method's authors count it, stated per row (``ROWS``):

- ABC: 60,000 images in steps of two stacks of 64, 468.75 steps [ours: Table S2 (supplement
  L117-121) gives seconds per epoch without defining the epoch];
- ML-VAE: the authors' batches of 256 images (main.py L9) over 60,000 images, 234.375 steps;
- CC-VAE: the authors' epoch loop, int(60,000 / 64) = 937 iterations of a batch of 64 pairs
  (training.py L116), one of our steps each (``set_a``'s two stacks of 64 paired image by image).

  python -m benchmarks.baselines_epoch [--data_path=/path/to/mnist] [--repeats=5] [--no_write]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import keras

from abc_tf.runs.experiments import get_preset
from abc_tf.data.mnist import family as mnist
from abc_tf.data.mnist import sources as mnist_sources
from abc_tf.runs import training
from benchmarks.mnist_epoch import IMAGES_PER_EPOCH, pipeline_seconds_per_batch
from benchmarks import report
from benchmarks.report import machine_line, save_results, write_section

TITLE = "MNIST epoch time: ABC and the paper's baselines (Table S2)"
FILE = "docs/figures/benchmarks/baselines_epoch.json"
# (method, preset, steps per epoch as its authors count one, that count's source); the paper's
# s/epoch (Table S2, Tesla K80).
ROWS = (
    ("ABC", "mnist", IMAGES_PER_EPOCH / (2 * 64), "60,000 images, two stacks of 64 a step [ours]", 47.8),
    ("ML-VAE", "mnist_ml_vae", IMAGES_PER_EPOCH / 256, "60,000 images in the authors' batches of 256", None),
    (
        "CC-VAE",
        "mnist_cc_vae",
        IMAGES_PER_EPOCH // 64,
        "the authors' int(60,000 / 64) iterations of 64 pairs",
        150.2,
    ),
)


def cpu_seconds_of_machine() -> tuple[float, float]:
    """(busy, stolen) CPU seconds of this machine since boot, from ``/proc/stat``: busy is time
    its processes ran, stolen the time a hypervisor gave its cores to other machines."""
    with open("/proc/stat") as handle:
        user, nice, system, idle, iowait, irq, softirq, steal = (
            int(value) for value in handle.readline().split()[1:9]
        )
    tick = os.sysconf("SC_CLK_TCK")
    return (user + nice + system + irq + softirq) / tick, steal / tick


def prepared_model(config):
    """``config``'s compiled model and 8 of its family's batches held in memory, traced once."""
    dataset = mnist.make_dataset(config, seed=config.trainer.seed).take(8).cache().repeat()
    model = training.build_model(config)
    model.steps_per_execution = training.steps_per_execution(config)  # what the trainer runs
    model.fit(dataset, epochs=1, steps_per_epoch=2 * model.steps_per_execution, verbose=0, shuffle=False)
    return model, dataset


def time_epoch(model, dataset, steps_per_epoch: float) -> tuple[float, float]:
    """(wall, CPU) seconds of one epoch of ``steps_per_epoch`` steps: whole compiled calls
    covering the epoch are timed and scaled to its exact step count."""
    per_call = model.steps_per_execution
    steps = per_call * -(-int(steps_per_epoch) // per_call)
    start, cpu = time.perf_counter(), time.process_time()
    model.fit(dataset, epochs=1, steps_per_epoch=steps, verbose=0, shuffle=False)
    scale = steps_per_epoch / steps
    return (time.perf_counter() - start) * scale, (time.process_time() - cpu) * scale


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--data_path", default="", help="MNIST IDX directory or .npz (default: each preset's auto choice)."
    )
    parser.add_argument(
        "--repeats", type=int, default=5, help="Timed epochs per method (the median is reported)."
    )
    parser.add_argument("--no_write", action="store_true", help="Print only; leave BENCHMARKS.md alone.")
    args = parser.parse_args()
    if args.repeats <= 0:
        raise SystemExit("--repeats must be positive.")
    load_before = os.getloadavg()
    configs = [get_preset(preset).replace(path=args.data_path, jit_compile=False) for _, preset, *_ in ROWS]
    source = mnist_sources.load_mnist(configs[0]).source
    prepared = [prepared_model(config) for config in configs]
    timings = [[] for _ in ROWS]
    (busy, stolen), own = cpu_seconds_of_machine(), time.process_time()
    start = time.perf_counter()
    for repeat in range(args.repeats):
        for row, (model, dataset), out in zip(ROWS, prepared, timings):
            out.append(time_epoch(model, dataset, row[2]))
            print(
                f"repeat {repeat + 1}, {row[0]}: {out[-1][0]:.1f} s wall, {out[-1][1]:.1f} s CPU", flush=True
            )
    elapsed = time.perf_counter() - start
    busy_after, stolen_after = cpu_seconds_of_machine()
    other_cores = ((busy_after - busy) - (time.process_time() - own)) / elapsed
    stolen_cores = (stolen_after - stolen) / elapsed
    keras.mixed_precision.set_global_policy("float32")
    pipeline = pipeline_seconds_per_batch(get_preset("mnist").replace(path=args.data_path), 100)
    abc_wall, abc_cpu = (statistics.median(column) for column in zip(*timings[0]))
    # The documents name the user's MNIST folder MNIST_DIR, never a path of the measuring machine.
    if args.data_path:
        source = source.replace(os.path.abspath(args.data_path), "MNIST_DIR") + (
            ", a folder of the four MNIST IDX files"
        )
    command = "python -m benchmarks.baselines_epoch" + (" --data_path=MNIST_DIR" if args.data_path else "")
    command += f" --repeats={args.repeats}"
    rows = []
    for (method, preset, steps_per_epoch, counted, paper), model_and_data, out in zip(
        ROWS, prepared, timings
    ):
        walls, cpus = zip(*out)
        wall, cpu = statistics.median(walls), statistics.median(cpus)
        rows.append(
            {
                "method": method,
                "preset": preset,
                "steps_per_epoch": steps_per_epoch,
                "steps_per_execution": model_and_data[0].steps_per_execution,
                "wall_seconds": wall,
                "wall_seconds_each": list(walls),
                "cpu_seconds": cpu,
                "cpu_seconds_each": list(cpus),
                "wall_over_abc": wall / abc_wall,
                "cpu_over_abc": cpu / abc_cpu,
                "paper_seconds": paper,
                "counted": counted,
            }
        )
    results = {
        "command": command,
        "rows": rows,
        "pipeline_ms_per_batch": pipeline * 1000,
        "load_before": load_before,
        "load": os.getloadavg(),
        "other_processes_cores": other_cores,
        "stolen_cores": stolen_cores,
        "machine": machine_line(),
        "data": source,
        "repeats": args.repeats,
    }
    if not args.no_write:
        save_results("baselines_epoch", results)
    body = section(results)
    if not args.no_write:
        write_section(TITLE, body)
    print(body)


def wall_verdict(abc: dict, cc_vae: dict) -> str:
    """The paper's ordering judged by wall seconds: it holds as an ordering when every CC-VAE
    epoch took longer than every ABC epoch (the gap larger than the repeats' spread)."""
    paper = cc_vae["paper_seconds"] / abc["paper_seconds"]
    fastest = min(cc_vae["wall_seconds_each"]) / min(abc["wall_seconds_each"])
    abc_range = f"{min(abc['wall_seconds_each']):.1f}-{max(abc['wall_seconds_each']):.1f} s"
    cc_vae_range = f"{min(cc_vae['wall_seconds_each']):.1f}-{max(cc_vae['wall_seconds_each']):.1f} s"
    if min(cc_vae["wall_seconds_each"]) > max(abc["wall_seconds_each"]):
        return (
            f"holds: every CC-VAE epoch took longer than every ABC epoch ({cc_vae['wall_over_abc']:.2f}x in "
            f"medians; the K80's {paper:.2f}x is other hardware)"
        )
    return (
        f"is not measurable here: the wall seconds of the two overlap (ABC {abc_range}, CC-VAE "
        f"{cc_vae_range}; medians {cc_vae['wall_over_abc']:.2f}x). They follow the cores the process "
        f"got (above) more than the step: the fastest epochs give {fastest:.2f}x and the CPU seconds "
        f"{cc_vae['cpu_over_abc']:.2f}x, against {paper:.2f}x on the K80"
    )


def section(results: dict) -> str:
    """The section of BENCHMARKS.md, from the results file alone."""
    rows = {row["method"]: row for row in results["rows"]}
    abc, cc_vae = rows["ABC"], rows["CC-VAE"]
    table = "\n".join(
        f"| {row['method']} | {row['steps_per_epoch']:g} | "
        f"{row['wall_seconds']:.1f} ({min(row['wall_seconds_each']):.1f}-"
        f"{max(row['wall_seconds_each']):.1f}) | "
        f"{row['wall_over_abc']:.2f} | " + (f"{row['paper_seconds']} |" if row["paper_seconds"] else "- |")
        for row in results["rows"]
    )
    before, others = results["load_before"][0], max(results["other_processes_cores"], 0)
    load = f"load {before:.2f} before, others used {others:.2f} cores"
    return f"""One epoch of each paper preset in turn, as its authors count one (float32, batches from \
memory); median and range of {results["repeats"]} repeats.

| method | steps/epoch | wall s (range) | wall / ABC | paper s (K80) |
|---|---|---|---|---|
{table}

`{results["command"]}`, {report.host(results, load)}

The paper's ordering (ABC's epoch faster than CC-VAE's) {wall_verdict(abc, cc_vae)}."""


if __name__ == "__main__":
    main()
