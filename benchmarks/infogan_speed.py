"""Elastic-InfoGAN's training step and the cost of its evaluation.

--method=elastic_infogan has presets mnist_elastic_infogan and mnist_elastic_infogan_quick. Both
train on batches of 64 real images, compiled with XLA, and differ only in length.

- train step: a D step and a G/Q/prior step, two Adam optimizers, NT-Xent on augmented real images.
  ``ElasticInfoGANModel.train_step`` runs eagerly op by op in a Python loop, PyTorch's way as in the
  authors' code. Against it run ``fit``, the compiled graph step, and ``fit`` with
  ``jit_compile=True``, XLA, where it compiles. The compiled uniform-InfoGAN ablation runs beside
  them: ``infogan_prior=uniform``, ``infogan_contrastive_weight=0``. It shows what the NT-Xent term
  costs: augmentation and a second trunk pass over 2B images. ``benchmarks.loops.interleaved_rates``
  times every setting in turn, round after round, fed from memory. It keeps the median of the
  rounds, so load from other jobs hits all alike.
- peak resident memory of a process that builds and trains one setting alone.
- evaluation: ``abc_tf.evaluation.tasks.digit_clusters`` on an untrained model of the trained shape,
  since the cost does not depend on the weights. It times the digit classifier's training, once,
  into a temporary cache directory, and its load from the cache. It times generating and
  classifying 1,000 images per code, and the 1-NN and k-means measures on the 10,000 test images.

The data are the procedural MNIST, ``data_source="procedural"``, so the benchmark needs no files.
Its images have the real MNIST's shape and type, and its splits the real sizes.

Writes docs/figures/benchmarks/infogan_speed.json and the section of BENCHMARKS.md.

  python -m benchmarks.infogan_speed [--steps 10] [--rounds 3] [--no_write]
"""

from __future__ import annotations

import os
import resource
import tempfile
import time

from benchmarks import report
from benchmarks.loops import train_step_eager_runner, train_step_fit_runner

TITLE = "Elastic-InfoGAN training step (CPU)"
FILE = "docs/figures/benchmarks/infogan_speed.json"
PAPER, QUICK = "mnist_elastic_infogan", "mnist_elastic_infogan_quick"
PER_CODE = 1000  # generated images per categorical code in the evaluation
MEMORY_STEPS = 10  # steps a process trains one setting for, for its peak memory
# name: (variant, runner); variant "elastic" (the preset) or "infogan" (uniform prior, no NT-Xent);
# runner "eager" (train_step op by op), "fit" (graph), "fit_xla".
SETTINGS = {
    "elastic_eager": ("elastic", "eager"),
    "elastic_fit": ("elastic", "fit"),
    "elastic_fit_xla": ("elastic", "fit_xla"),
    "infogan_fit": ("infogan", "fit"),
    "infogan_fit_xla": ("infogan", "fit_xla"),
}
MEMORY_SETTINGS = ("elastic_eager", "elastic_fit", "elastic_fit_xla", "infogan_fit")
LABELS = {
    "elastic_eager": "Elastic-InfoGAN, eager",
    "elastic_fit": "Elastic-InfoGAN, graph",
    "elastic_fit_xla": "Elastic-InfoGAN, XLA",
    "infogan_fit": "InfoGAN ablation (uniform prior, no NT-Xent), graph",
    "infogan_fit_xla": "InfoGAN ablation (uniform prior, no NT-Xent), XLA",
}


def config_for(variant: str, jit_compile: bool):
    """The paper's preset, or its uniform-InfoGAN ablation, on the procedural MNIST, with or without XLA."""
    from abc_tf.runs import experiments

    config = experiments.get_preset(PAPER).replace(jit_compile=jit_compile, source="procedural")
    if variant == "infogan":
        config = config.replace(prior="uniform", contrastive_weight=0.0)
    return config


def _batch(config) -> dict:
    """One batch of the "images" stream."""
    from abc_tf import data
    from abc_tf.runs import training

    dataset = training.make_family_dataset(data.get_family(config.data.family), config, start_step=0)
    return {key: value.numpy() for key, value in next(iter(dataset)).items()}


def _setup(variant: str, jit_compile: bool):
    """The model, compiled as its preset would be, and one batch."""
    from abc_tf.runs import training

    config = config_for(variant, jit_compile)
    return config, training.build_model(config), _batch(config)


def runner(setting: str):
    variant, kind = SETTINGS[setting]
    _, model, images = _setup(variant, jit_compile=kind == "fit_xla")
    return train_step_eager_runner(model, images) if kind == "eager" else train_step_fit_runner(model, images)


def _failure(error: Exception) -> str:
    """The first line of an error that says why, e.g. XLA's "Detected unsupported operations"."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    for line in lines:
        if "unsupported operations" in line:
            return line[:300]
    return (lines[0] if lines else type(error).__name__)[:300]


# ---------------------------------------------------------------- measuring


def measure(steps: int, rounds: int) -> dict:
    import tensorflow as tf

    from benchmarks import loops

    runners, failed = {}, {}
    for setting in SETTINGS:
        try:
            runners[setting] = runner(setting)
        except Exception as error:  # noqa: BLE001  XLA may refuse an op of the step
            failed[setting] = _failure(error)
    rates = loops.interleaved_rates(runners, steps, rounds)
    _, model, batch = _setup("elastic", False)
    return {
        "rates": rates,
        "failed": failed,
        "images_per_step": int(len(batch["images"])),
        "parameters": int(sum(int(tf.size(v)) for v in model.trainable_variables)),
    }


def evaluation_seconds(per_code: int = PER_CODE) -> dict:
    """Seconds of each part of ``digit_clusters.evaluate_run``'s work on an untrained model of the
    preset's shape. The classifier is cached in a temporary directory."""
    import numpy as np
    from sklearn.metrics import normalized_mutual_info_score

    from abc_tf.data.mnist import sources as mnist_sources
    from abc_tf.data.mnist import imbalance as mnist_imbalance
    from abc_tf.evaluation.tasks import digit_clusters, mnist_classifier
    from abc_tf.runs import training
    from abc_tf.runs.run_dir import embed

    config = config_for("elastic", False)
    model = training.build_model(config)
    data = mnist_sources.load_mnist(config)
    seconds = {}

    def timed(name, work):
        start = time.perf_counter()
        value = work()
        seconds[name] = time.perf_counter() - start
        return value

    with tempfile.TemporaryDirectory() as cache:
        classifier, accuracy, _ = timed(
            "classifier_training", lambda: mnist_classifier.digit_classifier(config, cache)
        )
        classifier, _, _ = timed(
            "classifier_cached", lambda: mnist_classifier.digit_classifier(config, cache)
        )

    def generated():
        codes, digits = digit_clusters.generated_codes_and_digits(model.generator, classifier, per_code)
        matrix = digit_clusters.count_matrix(codes, digits)
        return digit_clusters.matrix_nmi(matrix), digit_clusters.ent(matrix)

    timed("generated", generated)
    features = timed("embedding", lambda: embed(model.encoder, data.x_test[..., None]))
    timed("nearest_neighbour", lambda: digit_clusters.nearest_neighbour_accuracy(features, data.y_test))
    timed("kmeans", lambda: digit_clusters.kmeans_nmi(features, data.y_test))
    timed(
        "q_code",
        lambda: normalized_mutual_info_score(
            data.y_test, mnist_classifier.classify(model.q, data.x_test[..., None])
        ),
    )
    return {
        "seconds": seconds,
        "classifier_accuracy": accuracy,
        "test_images": int(len(data.y_test)),
        "train_images": int(
            len(mnist_sources.load_mnist(config.replace(class_split=mnist_imbalance.NO_SPLIT)).y_train)
        ),
        "split_images": int(len(data.y_train)),
        "feature_dim": int(np.shape(features)[1]),
        "per_code": per_code,
        "class_split": int(config.data.class_split),
    }


def peak_memory(setting: str, steps: int) -> float | None:
    """Runs in a child process: the peak RSS in MB of building ``setting`` and training ``steps`` steps.
    None where the setting does not compile."""
    try:
        run = runner(setting)
    except Exception:  # noqa: BLE001
        return None
    run(steps)
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


# ---------------------------------------------------------------- the section


def section(results: dict) -> str:
    """The section of BENCHMARKS.md, from the results file alone."""
    result, evaluation = results["result"], results["evaluation"]
    rates, failed = result["rates"], result.get("failed", {})
    eager = rates["elastic_eager"]
    lines = [
        f"`{PAPER}`'s step from memory, median of {results['rounds']} rounds of {results['steps']} steps.",
        "",
        "| setting | steps/s | over eager |",
        "|---|---|---|",
    ]
    for setting in (setting for setting in SETTINGS if setting != "infogan_fit_xla"):  # that one: the JSON
        if setting in failed:
            lines.append(f"| {LABELS[setting]} | does not compile | - |")
            continue
        lines.append(f"| {LABELS[setting]} | {rates[setting]:.2f} | {rates[setting] / eager:.1f}x |")
    lines.append("")
    for setting, reason in failed.items():
        lines += [f"{LABELS[setting]}: {reason}", ""]
    compiled = {
        setting: rates[setting] / eager for setting in ("elastic_fit", "elastic_fit_xla") if setting in rates
    }
    met = max(compiled.values(), default=0) >= 3
    seconds = evaluation["seconds"]
    later = sum(value for key, value in seconds.items() if key != "classifier_training")
    first = later - seconds["classifier_cached"] + seconds["classifier_training"]
    lines += [
        f"`{results['command']}`, {report.host(results)}",
        "",
        f"Goal compiled >= 3x eager: {'met' if met else 'not met'}"
        + ("" if "elastic_fit_xla" in compiled else "; XLA does not compile the step (why: above)")
        + f". An evaluation takes {later:.1f} s, "
        f"{first:.1f} s the first time.",
    ]
    return "\n".join(lines)


def main() -> None:
    args = report.rounds_arguments(__doc__, 10, "Train steps per setting and round.")
    if report.answer_child(
        args.child,
        {"measure": lambda: measure(args.steps, args.rounds), "evaluation": evaluation_seconds},
        lambda setting: peak_memory(setting, MEMORY_STEPS),
    ):
        return
    load_start = os.getloadavg()[0]
    this = "benchmarks.infogan_speed"  # run again in children, each measuring alone
    arguments = ["--steps", str(args.steps), "--rounds", str(args.rounds)]
    result = report.run_child(this, ["--child", "measure", *arguments])
    memory = {
        setting: report.run_child(this, ["--child", setting])
        for setting in MEMORY_SETTINGS
        if setting not in result["failed"]
    }
    evaluation = report.run_child(this, ["--child", "evaluation"])
    results = {
        "steps": args.steps,
        "rounds": args.rounds,
        "memory_steps": MEMORY_STEPS,
        "result": result,
        "memory": memory,
        "evaluation": evaluation,
        **report.measured(load_start),
        "command": f"python -m {this} {' '.join(arguments)}",
    }
    if not args.no_write:
        report.save_results("infogan_speed", results)
    report.publish(TITLE, section(results), write=not args.no_write)


if __name__ == "__main__":
    main()
