"""VITAE's training step and spatial transformer: eager, graph and XLA, an MNIST epoch, and memory.

The method is --method=c_vitae. Preset mnist_c_vitae trains on batches of 512 in a graph.
mnist_c_vitae_quick trains on batches of 128 with XLA.

- the spatial transformer alone: theta -> expm -> bilinear sampling, forward and the gradient to
  theta and to the image. It runs at batch 128 and 512, eager, as ``tf.function`` and as
  ``tf.function(jit_compile=True)``. Times are in microseconds per image.
- the C-VITAE train step: ``VITAEModel.train_step`` runs eagerly op by op in a Python loop, PyTorch's
  way as in the authors' code. Against it run ``fit``, the compiled graph step, and ``fit`` with
  ``jit_compile=True``, XLA. Both batch sizes are fed from memory. The VAE and U-VITAE run beside
  them, compiled with XLA. ``benchmarks.loops.interleaved_rates`` times every setting in turn, round
  after round, and keeps the median. So load from other jobs hits all alike.
- an MNIST epoch of 54,051 training images, digit 9 held out, at each batch size. It comes from the
  measured rates, and from ``fit`` fed by the real "images" stream in the preset's own setting. That
  stream is ``abc_tf.data.mnist.family.make_images_dataset``. It reads the procedural MNIST,
  ``data_source="procedural"``, so the benchmark needs no files.
- peak resident memory of a process that builds and trains one setting alone.

Writes docs/figures/benchmarks/vitae_speed.json and the section of BENCHMARKS.md from it.

  python -m benchmarks.vitae_speed [--steps 20] [--rounds 3] [--no_write]
"""

from __future__ import annotations
from abc_tf.runs import experiments

import math
import os
import resource
import time

from benchmarks import report
from benchmarks.loops import train_step_eager_runner, train_step_fit_runner

TITLE = "VITAE training step (CPU)"
FILE = "docs/figures/benchmarks/vitae_speed.json"
GOAL = 3.0  # compiled steps/s over eager steps/s asked for, at each batch size
MEMORY_STEPS = 10  # steps a peak-memory child trains
PAPER, QUICK = "mnist_c_vitae", "mnist_c_vitae_quick"
BATCHES = (512, 128)  # the paper's, the quick preset's
EPOCH_IMAGES = 54_051  # MNIST's 60,000 training images less the 5,949 nines
WARP_MODES = ("eager", "function", "xla")
# name: (variant, batch, runner); runner "eager" (train_step op by op), "fit" (graph), "fit_xla".
SETTINGS = {
    f"{variant}_{runner}_{batch}": (variant, batch, runner)
    for batch in BATCHES
    for variant, runners in (
        ("c_vitae", ("eager", "fit", "fit_xla")),
        ("u_vitae", ("fit_xla",)),
        ("vae", ("fit_xla",)),
    )
    for runner in runners
}
MEMORY_SETTINGS = ("c_vitae_eager_512", "c_vitae_fit_512", "c_vitae_fit_xla_512", "c_vitae_fit_xla_128")


def config_for(variant: str, batch: int, jit_compile: bool):
    """The paper's preset of ``variant`` at ``batch``, on the procedural MNIST, with or without XLA."""

    return experiments.get_preset(f"mnist_{variant}").replace(
        batch_size=batch, jit_compile=jit_compile, source="procedural"
    )


def _batch(config) -> dict:
    """One batch of the "images" stream."""
    from abc_tf import data
    from abc_tf.runs import training

    dataset = training.make_family_dataset(data.get_family(config.data.family), config, start_step=0)
    return {key: value.numpy() for key, value in next(iter(dataset)).items()}


def _setup(variant: str, batch: int, jit_compile: bool):
    """The model, compiled as its preset would be, and one batch.
    The step is set past the KL warm-up."""
    from abc_tf.runs import training

    config = config_for(variant, batch, jit_compile)
    model = training.build_model(config)
    model.optimizer.iterations.assign(config.trainer.steps * 3 // 4)
    return config, model, _batch(config)


def runner(setting: str):
    variant, batch, kind = SETTINGS[setting]
    _, model, images = _setup(variant, batch, jit_compile=kind == "fit_xla")
    return train_step_eager_runner(model, images) if kind == "eager" else train_step_fit_runner(model, images)


# ---------------------------------------------------------------- the warp alone


def warp_step(mode: str):
    """The warp alone: ``(images, theta) -> (loss, d loss / d images, d loss / d theta)``.
    The path is theta -> T_theta = expm(...) -> bilinear sampling. The loss is a fixed weighting of the
    output's pixels. ``mode`` is "eager", "function" for tf.function, or "xla" for
    tf.function(jit_compile=True)."""
    import tensorflow as tf

    from models import spatial_transformer

    def step(images, theta, weights):
        with tf.GradientTape() as tape:
            tape.watch([images, theta])
            warped = spatial_transformer.warp(images, spatial_transformer.affine_matrices(theta))
            loss = tf.reduce_sum(warped * weights)
        image_gradient, theta_gradient = tape.gradient(loss, [images, theta])
        return loss, image_gradient, theta_gradient

    if mode == "eager":
        return step
    return tf.function(step, jit_compile=mode == "xla")


def warp_inputs(batch: int):
    """Images [batch, 28, 28, 1] in [0, 1], theta [batch, 6] of small maps, pixel weights [28, 28, 1]."""
    import tensorflow as tf

    images = tf.random.stateless_uniform([batch, 28, 28, 1], seed=[0, 1])
    theta = 0.2 * tf.random.stateless_normal([batch, 6], seed=[0, 2])
    weights = tf.random.stateless_normal([28, 28, 1], seed=[0, 3])
    return images, theta, weights


def warp_runner(mode: str, batch: int):
    step, inputs = warp_step(mode), warp_inputs(batch)

    def run(calls: int) -> float:
        start = time.perf_counter()
        for _ in range(calls):
            loss, _, _ = step(*inputs)
        float(loss)
        return calls / (time.perf_counter() - start)

    run(2)  # traces
    return run


# ---------------------------------------------------------------- measuring


def measure(steps: int, rounds: int) -> dict:
    import tensorflow as tf

    from abc_tf import data
    from abc_tf.data.mnist import family as mnist
    from abc_tf.runs import training
    from benchmarks import loops

    warp = loops.interleaved_rates(
        {f"{mode}_{batch}": warp_runner(mode, batch) for batch in BATCHES for mode in WARP_MODES},
        steps,
        rounds,
    )
    runners = {setting: runner(setting) for setting in SETTINGS}
    rates = loops.interleaved_rates(runners, steps, rounds)
    # fit fed by the "images" stream in each preset's own setting (after the others: see
    # loops.pipeline_fit_rate), and the stream alone.
    pipeline, stream = {}, {}
    for preset in (PAPER, QUICK):
        config = experiments.get_preset(preset).replace(source="procedural")
        dataset = training.make_family_dataset(data.get_family(config.data.family), config, start_step=0)
        iterator = iter(dataset)
        next(iterator)
        batches = max(1000, steps * rounds)  # well past what the prefetch buffer holds
        start = time.perf_counter()
        for _ in range(batches):
            next(iterator)
        stream[str(config.batch.batch_size)] = batches / (time.perf_counter() - start)
        del iterator
        model = training.build_model(config)
        model.optimizer.iterations.assign(config.trainer.steps * 3 // 4)
        pipeline[str(config.batch.batch_size)] = loops.pipeline_fit_rate(model, dataset, steps, rounds)
    procedural = len(mnist.training_images(config_for("c_vitae", 128, False))[0])
    _, model, _ = _setup("c_vitae", 128, False)
    return {
        "warp": warp,
        "rates": rates,
        "pipeline": pipeline,
        "stream": stream,
        "procedural_images": procedural,
        "parameters": int(sum(int(tf.size(v)) for v in model.trainable_variables)),
    }


def peak_memory(setting: str, steps: int) -> float:
    """Runs in a child process: the peak RSS in MB of building ``setting`` and training ``steps`` steps."""
    runner(setting)(steps)
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


# ---------------------------------------------------------------- the section


def epoch_seconds(steps_per_s: float, batch: int, images: int = EPOCH_IMAGES) -> float:
    """Seconds for one epoch of ``images`` images at ``batch``; the last step is a full batch too."""
    return math.ceil(images / batch) / steps_per_s


def goal_verdict(rates: dict, batch: int) -> str:
    """The graph's and XLA's steps/s over the eager loop's at ``batch``, and whether either reaches GOAL."""
    eager = rates[f"c_vitae_eager_{batch}"]
    graph, xla = rates[f"c_vitae_fit_{batch}"] / eager, rates[f"c_vitae_fit_xla_{batch}"] / eager
    met = "met" if max(graph, xla) >= GOAL else "not met"
    return f"{met} at batch {batch} (best {max(graph, xla):.2f}x)"


def section(results: dict) -> str:
    """The section of BENCHMARKS.md, from the results file alone."""
    rates = results["result"]["rates"]
    columns = (("c_vitae", "eager"), ("c_vitae", "fit"), ("c_vitae", "fit_xla"), ("u_vitae", "fit_xla"))
    columns += (("vae", "fit_xla"),)
    lines = [
        f"Steps/s of `{PAPER}` and `{QUICK}` from memory, median of {results['rounds']} rounds of "
        f"{results['steps']} steps (over C-VITAE's eager loop).",
        "",
        "| batch | C-VITAE eager | C-VITAE graph | C-VITAE XLA | U-VITAE XLA | VAE XLA |",
        "|---|---|---|---|---|---|",
    ]
    for batch in BATCHES:
        eager = rates[f"c_vitae_eager_{batch}"]
        cells = [rates[f"{variant}_{kind}_{batch}"] for variant, kind in columns]
        lines.append(
            f"| {batch} | " + " | ".join(f"{rate:.2f} ({rate / eager:.1f}x)" for rate in cells) + " |"
        )
    verdicts = "; ".join(goal_verdict(rates, batch) for batch in BATCHES)
    lines += [
        "",
        f"`{results['command']}`, {report.host(results)}",
        "",
        f"Goal compiled >= {GOAL:g}x eager: {verdicts}.",
    ]
    return "\n".join(lines)


def main() -> None:
    args = report.rounds_arguments(__doc__, 20, "Train steps (warp calls) per setting and round.")
    if report.answer_child(
        args.child,
        {"measure": lambda: measure(args.steps, args.rounds)},
        lambda setting: peak_memory(setting, MEMORY_STEPS),
    ):
        return
    load_start = os.getloadavg()[0]
    this = "benchmarks.vitae_speed"  # run again in children, each measuring alone
    result = report.run_child(
        this, ["--child", "measure", "--steps", str(args.steps), "--rounds", str(args.rounds)]
    )
    memory = {setting: report.run_child(this, ["--child", setting]) for setting in MEMORY_SETTINGS}
    results = {
        "steps": args.steps,
        "rounds": args.rounds,
        "memory_steps": MEMORY_STEPS,
        "epoch_images": EPOCH_IMAGES,
        "result": result,
        "memory": memory,
        **report.measured(load_start),
        "command": f"python -m benchmarks.vitae_speed --steps {args.steps} --rounds {args.rounds}",
    }
    if not args.no_write:
        report.save_results("vitae_speed", results)
    report.publish(TITLE, section(results), write=not args.no_write)


if __name__ == "__main__":
    main()
