"""PMP's training step: eager against compiled, the pairs pipeline, and peak memory.

The method is --method=pmp with preset shapes3d_pmp: 32 pairs, 64 images a step.

- ``PMPModel.train_step`` runs eagerly op by op in a Python loop, PyTorch's way as in the authors'
  code. Against it runs ``PMPModel.fit``, the compiled train step, in float32 and in mixed precision,
  fed from memory. ``benchmarks.loops.interleaved_rates`` times every setting in turn, round after
  round, and keeps the median of the rounds. So load from other jobs hits all alike.
- the pairs pipeline alone, and the mixed-precision fit fed by it as in training.
- peak resident memory of a process that builds and trains each setting alone.

Steps are timed in the full phase, the optimizer step set past half of the run. There every loss
term is on, and L_cons costs a second decoder and encoder pass. For the compiled float32 step, the
warm-up's steps are timed as well: they train reconstruction alone.

XLA, ``jit_compile``, is left out. Its CPU convolutions are slower than oneDNN's: the suite's
shapes3d row reads 0.9x. An interleaved PMP run with XLA did not finish three rounds in 13 minutes
of CPU time.

Writes docs/figures/benchmarks/pmp_speed.json and the section of BENCHMARKS.md from it.

  python -m benchmarks.pmp_speed [--steps 10] [--rounds 3] [--no_write]
"""

from __future__ import annotations
from abc_tf.runs import experiments

import os
import resource
import time

from benchmarks import report
from benchmarks.loops import train_step_eager_runner, train_step_fit_runner

EXPERIMENT = "shapes3d_pmp"
# name: (mixed precision, steps_per_execution); the eager runners are float32.
SETTINGS = {
    "eager_authors": (False, 1),
    "eager": (False, 1),
    "fit": (False, 1),
    "fit_mixed": (True, 1),
    "fit_mixed_spe10": (True, 10),
    "floor_mixed": (True, 1),
}
TITLE = "PMP training step (CPU)"
FILE = "docs/figures/benchmarks/pmp_speed.json"
GOAL = 3.0  # compiled steps/s over eager steps/s asked for
MEMORY_STEPS = 10  # steps a peak-memory child trains


def _setup(mixed: bool, steps_per_execution: int = 1):
    """The preset's model in float32 or mixed precision, and one batch of pairs.
    The step is set in the full phase."""
    import keras

    from abc_tf import data
    from abc_tf.runs import training

    config = experiments.get_preset(EXPERIMENT).replace(
        mixed_precision=mixed, steps_per_execution=steps_per_execution
    )
    model = training.build_model(config)
    keras.mixed_precision.set_global_policy("float32")  # build_model set it; the next model sets its own
    batch = next(iter(data.get_family(config.data.family).stream("pairs")(config, 0, 0)))
    model.optimizer.iterations.assign(config.trainer.steps * 3 // 4)
    return config, model, batch


def runner(setting: str):
    mixed, steps_per_execution = SETTINGS[setting]
    _, model, batch = _setup(mixed, steps_per_execution)
    if setting == "eager_authors":
        return authors_eager_runner(model, batch)
    if setting == "eager":
        return train_step_eager_runner(model, batch)
    if setting == "floor_mixed":
        return floor_runner(model, batch)
    return train_step_fit_runner(model, batch)


def authors_loss(model, batch, iteration: int):
    """The loss of one step in the structure of the authors' PyTorch step.
    Each projector is called on its own, as in their list of k small networks. The k mixes of L_cons are
    assembled in a Python loop over the subspaces. Then 2B of them are kept at random. The vectorised
    parts of their step are the library's functions: sparsity, distances and usage. Call it under a
    GradientTape."""
    import tensorflow as tf

    from abc_tf.methods.pmp import losses as pmp_losses
    from abc_tf.methods.base import to_float_images

    kernel1, bias1, kernel2, bias2 = model.projectors.get_layer("projectors").weights
    k = model.num_subspaces

    def latents(features):
        return [tf.nn.relu(features @ kernel1[i] + bias1[i]) @ kernel2[i] + bias2[i] for i in range(k)]

    x1, x2 = to_float_images(batch["x1"]), to_float_images(batch["x2"])
    images = tf.concat([x1, x2], axis=0)
    pairs = x1.shape[0]
    codes = latents(model.features(images, training=True))
    rec = pmp_losses.reconstruction_loss(model.decoder(tf.add_n(codes), training=True), images)
    stacked = tf.stack(codes, axis=1)
    squared, changed = pmp_losses.pair_distances(stacked[:pairs], stacked[pairs:])
    b1, b2, b3 = pmp_losses.loss_weights(iteration, model.total_steps, model.warmup)
    mixes, targets = [], []
    for i in range(k):
        mixed = [code[pairs:] for code in codes]
        mixed[i] = codes[i][:pairs]
        mixes.append(tf.add_n(mixed))
        targets.append(tf.stack(mixed, axis=1))
    keep = tf.random.shuffle(tf.range(k * pairs))[: 2 * pairs]
    z_mix = tf.gather(tf.concat(mixes, axis=0), keep)
    recoded = tf.stack(latents(model.features(model.decoder(z_mix, training=True), training=True)), axis=1)
    cons = tf.reduce_mean(tf.square(recoded - tf.gather(tf.concat(targets, axis=0), keep)))
    w = model.loss_weights
    return (
        rec
        + b1
        * (
            w["dis"] * pmp_losses.distance_loss(squared, changed)
            + w["spar"] * pmp_losses.sparsity_loss(stacked)
        )
        + b2 * w["cons"] * cons
        + b3 * w["reg"] * pmp_losses.usage_loss(squared)
        + model.weight_decay_term()
    )


def authors_eager_runner(model, batch):
    """:func:`authors_loss` and the update, eagerly, op by op, PyTorch's way."""
    import tensorflow as tf

    def step(iteration: int):
        with tf.GradientTape() as tape:
            loss = authors_loss(model, batch, iteration)
        variables = model.trainable_variables
        model.optimizer.apply(tape.gradient(loss, variables), variables)
        return loss

    def run(steps: int) -> float:
        start = time.perf_counter()
        for _ in range(steps):
            loss = step(int(model.optimizer.iterations.numpy()))
        float(loss)
        return steps / (time.perf_counter() - start)

    run(1)
    return run


def floor_runner(model, batch):
    """The floor under any compiled step: the four network passes of a PMP step alone.
    They are the encoder and decoder on the batch's images, then the decoder and encoder on as many
    mixes. They run forward and backward in one tf.function, with no loss terms and no optimizer update."""
    import tensorflow as tf

    from abc_tf.methods.base import to_float_images

    images = tf.concat([to_float_images(batch["x1"]), to_float_images(batch["x2"])], axis=0)
    variables = model.trainable_variables

    @tf.function
    def step():
        with tf.GradientTape() as tape:
            z = tf.reduce_sum(model.codes(images, training=True), axis=1)
            reconstruction = model.decode(z, training=True)
            recoded = model.codes(model.decode(tf.reverse(z, [0]), training=True), training=True)
            total = tf.reduce_mean(tf.square(reconstruction - images)) + tf.reduce_mean(tf.square(recoded))
        return tape.gradient(total, variables)

    def run(steps: int) -> float:
        start = time.perf_counter()
        for _ in range(steps):
            gradients = step()
        float(tf.reduce_sum(tf.cast(gradients[0], tf.float32)))
        return steps / (time.perf_counter() - start)

    run(2)  # traces
    return run


def measure(steps: int, rounds: int) -> dict:
    import statistics

    import tensorflow as tf

    from abc_tf import data
    from abc_tf.runs import training
    from benchmarks import loops

    runners = {setting: runner(setting) for setting in SETTINGS}
    rates = loops.interleaved_rates(runners, steps, rounds)
    # The warm-up phase (reconstruction alone), compiled float32.
    config, warm, batch = _setup(mixed=False)
    warm.optimizer.iterations.assign(0)
    warm_run = train_step_fit_runner(warm, batch)
    rates["fit_warmup"] = statistics.median(warm_run(steps) for _ in range(rounds))
    # The pairs pipeline alone, then the mixed fit fed by it (after the others: see loops.pipeline_fit_rate).
    dataset = training.make_family_dataset(data.get_family(config.data.family), config, start_step=0)
    iterator = iter(dataset)
    next(iterator)
    start = time.perf_counter()
    for _ in range(steps * rounds * 4):
        next(iterator)
    pipeline = steps * rounds * 4 / (time.perf_counter() - start)
    del iterator
    _, fed, _ = _setup(mixed=True)
    rates["fit_mixed_pipeline"] = loops.pipeline_fit_rate(fed, dataset, steps, rounds)
    return {
        "images_per_step": 2 * config.batch.pairs_per_step,
        "rates": rates,
        "pipeline_steps_per_s": pipeline,
        "mixed_policy": training.precision_policy(config.replace(mixed_precision=True)),
        "parameters": int(sum(int(tf.size(v)) for v in warm.trainable_variables)),
    }


def peak_memory(setting: str, steps: int) -> float:
    """Runs in a child process: the peak RSS in MB of building ``setting`` and training ``steps`` steps."""
    runner(setting)(steps)
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def goal_sentence(best: float, authors: float, ours: float) -> str:
    """Whether the best compiled step reaches GOAL times each eager loop, from the measured rates."""

    def verdict(eager: float) -> str:
        return "holds" if best / eager >= GOAL else "does not hold"

    return (
        f"Goal compiled >= {GOAL:g}x eager: the best compiled step is {best / authors:.2f}x the authors' "
        f"structure ({verdict(authors)}) and {best / ours:.2f}x our step run eagerly ({verdict(ours)})."
    )


def section(results: dict) -> str:
    """The section of BENCHMARKS.md, from the results file alone."""
    result = results["result"]
    rates, images = result["rates"], result["images_per_step"]
    authors, ours = rates["eager_authors"], rates["eager"]
    rows = [
        ("eager, the authors' structure", "eager_authors"),
        ("eager, our `train_step`", "eager"),
        ("`fit`, float32", "fit"),
        (f"`fit`, {result['mixed_policy']}", "fit_mixed"),
    ]
    lines = [
        f"`{EXPERIMENT}`, {images // 2} pairs a step, every loss term on; median of {results['rounds']} "
        f"interleaved rounds of {results['steps']} steps.",
        "",
        "| setting | steps/s | over eager (authors') | over eager (ours) |",
        "|---|---|---|---|",
    ]
    for label, key in rows:
        lines.append(
            f"| {label} | {rates[key]:.2f} | {rates[key] / authors:.1f}x | {rates[key] / ours:.1f}x |"
        )
    best = max(rates[key] for key in ("fit", "fit_mixed", "fit_mixed_spe10"))
    lines += [
        "",
        f"`{results['command']}`, {report.host(results)}",
        "",
        goal_sentence(best, authors, ours),
    ]
    return "\n".join(lines)


def main() -> None:
    args = report.rounds_arguments(__doc__, 10, "Steps per setting and round.")
    if report.answer_child(
        args.child,
        {"measure": lambda: measure(args.steps, args.rounds)},
        lambda setting: peak_memory(setting, MEMORY_STEPS),
    ):
        return
    load_start = os.getloadavg()[0]
    this = "benchmarks.pmp_speed"  # run again in children, each measuring alone
    result = report.run_child(
        this, ["--child", "measure", "--steps", str(args.steps), "--rounds", str(args.rounds)]
    )
    memory = {
        setting: report.run_child(this, ["--child", setting])
        for setting in SETTINGS
        if setting not in ("fit_mixed_spe10", "floor_mixed")
    }
    results = {
        "steps": args.steps,
        "rounds": args.rounds,
        "memory_steps": MEMORY_STEPS,
        "result": result,
        "memory": memory,
        **report.measured(load_start),
        "command": f"python -m benchmarks.pmp_speed --steps {args.steps} --rounds {args.rounds}",
    }
    if not args.no_write:
        report.save_results("pmp_speed", results)
    report.publish(TITLE, section(results), write=not args.no_write)


if __name__ == "__main__":
    main()
