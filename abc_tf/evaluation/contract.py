"""The method contract's checks: what every method's smallest run must do, whoever wrote it.

A method (``abc_tf.methods.base.Method``) declares ``smallest_run``, a few steps on built-in
data. Each check here trains it through the real trainer (``abc_tf.runs.training``) and raises
AssertionError or ValueError with a one-line message when the method breaks the contract:

- :func:`trains`: it trains its steps, every logged term finite, and its networks are saved;
- :func:`resumes`: stopped after its first checkpoint, it resumes from it to its last step;
- :func:`two_replicas`: its first step on two replicas gives one device's loss;
- :func:`evaluated`: ``evaluate`` measures its run and writes metrics.json.

``abc_tf check --method=NAME`` runs them against an installed plug-in, so its author checks it
the way tests/test_methods.py checks the built-in methods, with the same functions.
"""

from __future__ import annotations

import contextlib
import functools
import json
import math
import os

import keras
import numpy as np
import tensorflow as tf

from abc_tf import data, methods
from abc_tf.config import ExperimentConfig
from abc_tf.evaluation import tasks
from abc_tf.evaluation.estimators.mine import MineSettings
from abc_tf.evaluation.estimators.probes import ProbeSettings
from abc_tf.evaluation.tasks.factor_isolation import IsolationSettings
from abc_tf.evaluation.tasks.pose_accuracy import PoseEvalSettings
from abc_tf.evaluation.tasks.run_evaluation import METRICS_FILE
from abc_tf.methods.base import MethodModel
from abc_tf.data.family import check_batches
from abc_tf.runs import checkpoints, experiments, training
from abc_tf.runs.run_dir import ENCODER, load_run, network_file
from abc_tf.runs.training_logs import RunStopped

GUIDE = "abc_tf.examples.lab"
# A method that trains on each batch format, for a family checked on its own.
FORMAT_METHODS = {"sets": "abc", "pairs": "ada_gvae", "images": "vae"}


def family_checks(name: str) -> list[str]:
    """One "PASS ..." line per check of data family ``name`` on its own; ContractError or
    ValueError, one line, at the first that fails: each stream's first batch holds the uint8
    images its format names (abc_tf.data.family.BATCH_IMAGES), of the family's image_shape, and
    its evaluation task's labelled sample holds ``eval_images`` distinct images."""
    family, passed = data.get_family(name), []
    # A preset of the family where there is one: its settings fit together (pose's steps and titration).
    own = sorted(
        (preset.name, preset) for preset in experiments.presets().values() if preset.data.family == name
    )
    for batch_format in family.batch_formats:
        method = FORMAT_METHODS[batch_format]
        config = (
            experiments.choose(own[0][1], method=method)
            if own
            else experiments.config_for(data=name, method=method, name=f"{name}_check")
        )
        dataset = family.stream(batch_format)(config, config.trainer.seed, 0)
        batch = next(iter(dataset.take(1)))
        spec = {key: tf.TensorSpec.from_tensor(value) for key, value in batch.items()}
        check_batches(name, batch_format, spec, family.image_shape(config))
        passed.append(f"PASS the {batch_format!r} stream: {', '.join(sorted(batch))}")
    wanted = IsolationSettings.num_images  # evaluate's default sample, the largest a run draws by default
    if not family.evaluation_task:  # what a run's "Next:" leaves out
        passed.append("PASS no evaluation_task: evaluate refuses its runs, and train advises none")
    sample = tasks.labelled_sample(config, wanted, seed=1234)
    if sample is not None:
        distinct = len(np.unique(sample.images.reshape(len(sample.images), -1), axis=0))
        if distinct < wanted:
            raise ValueError(
                f"The data family {name!r}'s labelled sample of {wanted} images (evaluate's default "
                f"--num_images) holds {distinct} distinct images; a sample repeats no image: make the "
                "family's images vary more, or evaluate its runs with a smaller --num_images."
            )
        passed.append(f"PASS the labelled sample: {wanted} distinct images, labels {', '.join(sample.names)}")
    return passed


# Two replicas (traced) against one device (eager) change only the order of float32 sums: the
# batch means of the loss terms, the batch-norm moments all-reduced over the replicas, the
# replicas' gradients summed before the update, kernels that block a product differently for
# half the batch, and the ops a trace fuses. The rounding errors of a reordered sum of n terms
# grow like sqrt(n) * 2^-24; for the longest here, the GAN trunk's products of 6,272 terms,
# 79 * 6e-8 = 4.7e-6, and rtol is 4x that. (Measured on this project's CPU: at most 1.1e-6.
# Replicas repeating each other's random draws, the bug this guards against, moved the first
# loss by 3.4e-5 (c_vitae) to 2.5e-3 (elastic_infogan).)
MIRRORED_RTOL = 2e-5
# evaluate's measures at their smallest (its flags --num_images=48 --mine_steps=10
# --mine_batch_size=16 --mine_eval_samples=256 --probe_epochs=1 --disentanglement=none
# --measure_images=64 --pose_dictionary_size=16 --pose_repeats=2 --pose_queries=8): enough to run
# every measure of every family's task and of the method's own, not to measure anything well.
SMALL_EVALUATION = tasks.EvaluationSettings(
    isolation=IsolationSettings(
        num_images=48,
        mine=MineSettings(steps=10, batch_size=16, eval_samples=256),
        probe=ProbeSettings(epochs=1),
    ),
    pose=PoseEvalSettings(dictionary_size=16, repeats=2, num_queries=8, seed=IsolationSettings.sample_seed),
    disentanglement="none",
    measure_images=64,
)


def smallest_run(name: str) -> ExperimentConfig:
    """The smallest run method ``name`` declares; ValueError when it declares none."""
    run = methods.get_method(name).smallest_run
    if run is None:
        raise ValueError(
            f"The method {name!r} declares no smallest_run (the smallest run it trains, for the contract "
            f"checks); see {GUIDE}."
        )
    return run


def fresh_folder(work_dir: str, check: str) -> str:
    """``work_dir/check``, made empty: a check trains from scratch, never into an earlier run."""
    folder = os.path.join(work_dir, check)
    if os.path.isdir(folder) and os.listdir(folder):
        raise ValueError(f"{folder} holds an earlier run; check in an empty work folder.")
    os.makedirs(folder, exist_ok=True)
    return folder


def _train(config: ExperimentConfig, run_dir: str, callbacks=()) -> training.TrainResult:
    """``config`` trained into ``run_dir``; a run stopped by a NaN loss is the method's failure."""
    prepared = training.prepare(config, run_dir, verbose=0)
    if ENCODER not in prepared.model.networks():
        raise AssertionError(
            f"networks() names {sorted(prepared.model.networks())}, not {ENCODER!r} (the representation "
            f"every evaluator embeds with); see {GUIDE}."
        )
    try:
        return training.train_prepared(prepared, callbacks, verbose=0)
    except RunStopped as stop:
        raise AssertionError(str(stop).splitlines()[0]) from stop


def trains(name: str, work_dir: str, config: ExperimentConfig | None = None) -> training.TrainResult:
    """``config`` (the method's smallest run) trains its steps into ``work_dir/trains``, every term
    it logs finite, and keeps each network of ``networks()`` as ``<name>.keras``."""
    config = config or smallest_run(name)
    run_dir = fresh_folder(work_dir, "trains")
    result = _train(config, run_dir)
    if result.final_step != config.trainer.steps:
        raise AssertionError(f"trained {result.final_step} of its {config.trainer.steps} steps.")
    if not result.history.get("loss"):
        raise AssertionError("logged no 'loss' (track() names the terms it logs, 'loss' first).")
    for term, values in result.history.items():
        if not np.all(np.isfinite(values)):
            raise AssertionError(f"logged a non-finite {term!r}: {values}.")
    missing = [network for network in result.networks if not os.path.isfile(network_file(run_dir, network))]
    if missing:
        raise AssertionError(f"saved no {', '.join(f'{network}.keras' for network in missing)} in {run_dir}.")
    return result


class _StartStep(keras.callbacks.Callback):
    """The optimizer step a run's ``fit`` starts from: its checkpoint's when it resumed."""

    step: int | None = None

    def on_train_begin(self, logs=None):
        self.step = int(self.model.optimizer.iterations.numpy())


def resumes(name: str, work_dir: str, config: ExperimentConfig | None = None) -> training.TrainResult:
    """``config`` (the method's smallest run), stopped after its first checkpoint (trained with
    fewer steps), then run again: it resumes from that checkpoint, not from step 0, and ends
    at its last step. What a killed run does, without a process to kill."""
    config = config or smallest_run(name)
    first, steps = config.trainer.log_every, config.trainer.steps
    if steps <= first:
        raise ValueError(
            f"The run {config.name} trains {steps} steps with a checkpoint every {first}: none before its "
            "end to resume from; give it at least two (--trainer.log_every)."
        )
    run_dir = fresh_folder(work_dir, "resumes")
    _train(config.replace(steps=first), run_dir)
    saved = [step for step, _ in checkpoints.list_checkpoints(run_dir)]
    if saved[-1:] != [first]:
        raise AssertionError(
            f"stopped after step {first}, the run kept the checkpoints {saved}, not step {first}."
        )
    start = _StartStep()
    result = _train(config, run_dir, [start])
    if start.step != first:
        raise AssertionError(
            f"run again, it started at step {start.step}, not at its checkpoint's step {first}."
        )
    if result.final_step != steps:
        raise AssertionError(f"resumed from step {first}, it ended at step {result.final_step}, not {steps}.")
    return result


def fit_losses(
    config: ExperimentConfig,
    steps: int,
    strategy: tf.distribute.Strategy | None = None,
    eagerly: bool = False,
) -> tuple[MethodModel, list[float]]:
    """(the model, the loss of each of ``steps`` steps) of ``config``'s method, built as the
    trainer builds it (its precision policy, its seed; under ``strategy`` if given) and trained
    by ``fit`` on its family's stream, one Keras epoch a step; ``eagerly``: its step run op by
    op, not traced (the same arithmetic, without the seconds a trace costs)."""
    family = data.get_family(config.data.family)
    try:
        with strategy.scope() if strategy is not None else contextlib.nullcontext():
            model = training.build_model(config)
        model.run_eagerly = eagerly
        dataset = training.make_family_dataset(family, config, start_step=0)
        history = model.fit(dataset, epochs=steps, steps_per_epoch=1, verbose=0, shuffle=False)
    finally:
        keras.mixed_precision.set_global_policy("float32")  # build_model set the config's
    return model, history.history["loss"]


@functools.cache
def replica_strategy() -> tf.distribute.MirroredStrategy:
    """One MirroredStrategy over the logical CPU devices "/cpu:0" and "/cpu:1" for the process:
    a second strategy's collective ops would meet the first one's (TensorFlow numbers them from
    the same start). The split must be made before TensorFlow starts (``abc_tf check`` does)."""
    if len(tf.config.list_logical_devices("CPU")) < 2:
        raise ValueError(
            "two replicas need two logical CPU devices, made before TensorFlow starts "
            "(tf.config.set_logical_device_configuration); abc_tf check makes them."
        )
    return tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])


def two_replicas(
    name: str,
    work_dir: str = "",
    config: ExperimentConfig | None = None,
    strategy: tf.distribute.Strategy | None = None,
) -> tuple[float, float]:
    """The first step of ``config`` (the method's smallest run) on two replicas (``strategy``, by
    default :func:`replica_strategy`) gives the loss one device gives, within
    :data:`MIRRORED_RTOL`: each replica draws its own share of the batch's randomness and the
    update is the mean over the whole batch. (one device's loss, two replicas')."""
    del work_dir  # nothing is written
    config = config or smallest_run(name)
    strategy = strategy or replica_strategy()
    if strategy.num_replicas_in_sync != 2:
        raise ValueError(f"the strategy has {strategy.num_replicas_in_sync} replicas, not 2.")
    with tf.device("/cpu:0"):  # the devices the replicas run on, whatever else the host has
        _, [one] = fit_losses(config, 1, eagerly=True)  # op by op: only the replicas' step is traced
    _, [two] = fit_losses(config, 1, strategy)
    if not (math.isfinite(one) and math.isfinite(two)):
        raise AssertionError(f"the first loss is {one} on one device and {two} on two replicas.")
    if not math.isclose(two, one, rel_tol=MIRRORED_RTOL):
        raise AssertionError(
            f"the first loss on two replicas is {two:.9g}, on one device {one:.9g} "
            f"(relative difference {abs(two - one) / abs(one):.2g} > {MIRRORED_RTOL}): do the replicas "
            "repeat each other's random draws (abc_tf.methods.base.draw_rows)?"
        )
    return one, two


def evaluated(
    name: str,
    work_dir: str,
    config: ExperimentConfig | None = None,
    run_dir: str | None = None,
    settings: tasks.EvaluationSettings = SMALL_EVALUATION,
) -> dict:
    """``evaluate`` on a run of ``config`` (the method's smallest run): ``run_dir``, a finished one,
    else one trained into ``work_dir/evaluated``. Its family's task and the method's own measures
    (``Method.measures``, unless its family lacks what they read) write metrics.json beside the
    run; returns the metrics."""
    config = config or smallest_run(name)
    if run_dir is None:
        run_dir = fresh_folder(work_dir, "evaluated")
        _train(config, run_dir)
    metrics = tasks.evaluate_run(load_run(run_dir), run_dir, settings)
    path = os.path.join(run_dir, METRICS_FILE)
    if not os.path.isfile(path):
        raise AssertionError(f"evaluate wrote no {path}.")
    with open(path, encoding="utf-8") as handle:
        written = json.load(handle)
    method = methods.get_method(name)
    if method.measures and "method" not in written.get("skipped", {}) and "method" not in written:
        raise AssertionError(f"metrics.json has no 'method' entry: the measures {method.measures} gave none.")
    return metrics
