"""One training run: config -> data family and method -> the method's model.fit -> run directory.

The trainer knows no family or method by name: it reads their declarations (DataFamily, Method).
The same command resumes a killed run from its newest checkpoint.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import os
import sys
import warnings
from typing import Sequence

import keras
import numpy as np
import tensorflow as tf

from abc_tf import data, methods, registry

from abc_tf.config import ExperimentConfig
from abc_tf.data.family import DataFamily, check_batches
from abc_tf.methods.base import Method, MethodModel, is_multi_worker
from abc_tf.runs import (
    checkpoints,
    checks,
    compile_choice,
    config_history,
    export,
    precision,
    preemption,
    run_lock,
)
from abc_tf.runs.run_dir import ENCODER, SAVED_MODEL_DIR, network_file
from abc_tf.runs.hparams import HParamsLogger
from abc_tf.runs.training_logs import IntervalLogger, StopOnNonFiniteLoss


@dataclasses.dataclass
class TrainResult:
    networks: dict[str, keras.Model]  # MethodModel.networks(): "encoder" and the method's others
    history: dict[str, list[float]]  # per logging interval of the steps trained by this call
    run_dir: str
    final_step: int  # optimizer steps in total, including those of resumed runs
    precision: str = "float32"  # the Keras policy the run computed in (abc_tf.runs.precision)

    @property
    def encoder(self) -> keras.Model:
        return self.networks[ENCODER]


def precision_policy(config: ExperimentConfig) -> str:
    """The Keras policy of ``config`` on this host (abc_tf.runs.precision)."""
    return precision.choose(config.trainer.mixed_precision).policy


def build_model(config: ExperimentConfig, seed: int | None = None, policy: str | None = None) -> MethodModel:
    """The untrained, compiled model of ``config``'s method.

    The same seed gives the same initial weights; the seed is ``config.trainer.seed`` unless given.
    ``policy`` overrides this host's precision, e.g. a GPU's mixed_float16 on a CPU in
    benchmarks/gpu_readiness.py.
    """
    return _build(
        config, data.get_family(config.data.family), methods.get_method(config.method.name), seed, policy
    )


def _build(
    config: ExperimentConfig,
    family: DataFamily,
    method: Method,
    seed: int | None = None,
    policy: str | None = None,
) -> MethodModel:
    # The policy is global Keras state read when layers are created, so it is set here.
    keras.mixed_precision.set_global_policy(policy or precision_policy(config))
    keras.utils.set_random_seed(config.trainer.seed if seed is None else seed)
    image_shape = tuple(family.image_shape(config))
    try:
        model = method.build(config, image_shape)
        model.check_defined()
        return model
    except ValueError as error:
        if "output size would be zero or negative" not in str(error) or config.encoder is None:
            raise
        size = f" (--data.image_size={config.data.image_size})" if hasattr(config.data, "image_size") else ""
        raise ValueError(
            f"--encoder={config.encoder.architecture} cannot take images of shape {image_shape}{size}: "
            "its convolutions shrink them to nothing; use larger images."
        ) from None


def untrained_encoder(config: ExperimentConfig) -> keras.Model:
    """The representation of ``config`` before training: the same initial weights as its run."""
    return build_model(config).networks()[ENCODER]


def make_strategy(name: str) -> tf.distribute.Strategy:
    """The tf.distribute strategy named by ``config.trainer.strategy``.

    The method's batch P is global: ``pairs_per_step``, or ``batch_size`` for methods on single images
    (``BatchConfig.global_batch_field``). Each of the R replicas trains on P / R of it, and the update
    is the mean over all P. So the learning rate means the same thing on any number of devices.
    """
    if name == "default":
        return tf.distribute.get_strategy()
    if name == "mirrored":
        return tf.distribute.MirroredStrategy()
    if name == "multi_worker":
        if "TF_CONFIG" not in os.environ:
            raise ValueError(
                "--trainer.strategy=multi_worker needs the TF_CONFIG environment variable "
                "describing the cluster."
            )
        return tf.distribute.MultiWorkerMirroredStrategy()
    if name == "tpu":
        try:
            resolver = tf.distribute.cluster_resolver.TPUClusterResolver()
            tf.config.experimental_connect_to_cluster(resolver)
            tf.tpu.experimental.initialize_tpu_system(resolver)
        except (ValueError, tf.errors.OpError) as error:
            raise ValueError(f"--trainer.strategy=tpu found no TPU to connect to: {error}") from error
        return tf.distribute.TPUStrategy(resolver)
    raise ValueError(f"Unknown strategy {name!r}; choose one of default, mirrored, multi_worker, tpu.")


def steps_per_log(config: ExperimentConfig, start_step: int = 0) -> int:
    """Steps per Keras epoch, such that every log step, the last step and the resume step end an epoch.

    Log steps are multiples of ``log_every``. So a run trains exactly ``steps`` steps.
    """
    return math.gcd(config.trainer.log_every, config.trainer.steps, start_step)


# The most steps "auto" runs per compiled call. One Python round trip a call costs about 8 ms, a
# fifth of a 30 ms step at one step a call; at 10 it is under 3% of the fastest step, while a
# SIGTERM or Ctrl-C still stops within 10 steps (the stop comes at the end of a call).
AUTO_STEPS_PER_EXECUTION = 10


def steps_per_execution(config: ExperimentConfig, start_step: int = 0) -> int:
    """Steps per compiled call: ``config.trainer.steps_per_execution`` lowered to divide the epoch.

    Keras runs whole calls, so one that overlaps an epoch end would train past the log step.
    For 0 (auto): the largest divisor of the epoch and of ``eval_every`` up to
    :data:`AUTO_STEPS_PER_EXECUTION`.
    Every log and evaluation step then ends a call.
    """
    epoch = steps_per_log(config, start_step)
    if config.trainer.steps_per_execution:
        return math.gcd(config.trainer.steps_per_execution, epoch)
    span = math.gcd(epoch, config.trainer.eval_every)  # gcd(n, 0) = n: no evaluation steps
    return max(count for count in range(1, AUTO_STEPS_PER_EXECUTION + 1) if span % count == 0)


def _task_name(strategy: tf.distribute.Strategy) -> str:
    resolver = strategy.cluster_resolver
    return f"{resolver.task_type}_{resolver.task_id}"


def data_seed(config: ExperimentConfig, start_step: int) -> int:
    """A resumed run draws fresh batches instead of replaying the first ones."""
    if start_step == 0:
        return config.trainer.seed
    return int(np.random.SeedSequence([config.trainer.seed, start_step]).generate_state(1)[0])


def make_family_dataset(family: DataFamily, config: ExperimentConfig, start_step: int) -> tf.data.Dataset:
    """The family's batches in the format the config's method trains on, from step ``start_step`` on."""
    stream = family.stream(config.method.batch_format)
    dataset = stream(config, data_seed(config, start_step), start_step)
    check_batches(family.name, config.method.batch_format, dataset.element_spec, family.image_shape(config))
    if tf.config.list_physical_devices("GPU") or tf.config.list_physical_devices("TPU"):
        return dataset
    # Training on the CPU: the pipeline and the training step share the cores, and a pipeline
    # free to use all of them oversubscribes them (pose_quick on 2 cores: 1.9 steps/s with
    # tf.data's default pool, 2.7 with one thread, 3.8 from memory; BENCHMARKS.md).
    options = tf.data.Options()
    options.threading.private_threadpool_size = max(1, (os.cpu_count() or 2) // 2)
    return dataset.with_options(options)


@dataclasses.dataclass(frozen=True)
class PreparedRun:
    """A run checked and its model built, before any data is read; see :func:`prepare`."""

    config: ExperimentConfig
    run_dir: str
    family: DataFamily
    method: Method
    strategy: tf.distribute.Strategy
    model: MethodModel
    changes: dict
    start_step: int


def prepare(
    config: ExperimentConfig,
    run_dir: str,
    strategy: tf.distribute.Strategy | None = None,
    allow_changes: Sequence[str] = (),
    verbose: int = 2,
) -> PreparedRun:
    """Runs, once, every check that can fail on user input before data is read.

    Building the model in the strategy's scope catches e.g. images too small for the convolutions or
    unreadable pretrained weights. ``strategy`` overrides ``config.trainer.strategy``.
    ``allow_changes`` names fields of :data:`config_history.CHANGEABLE_FIELDS` that may differ from the
    run directory's config. A raised ``steps`` extends a finished run without being named.
    """
    family, method = checks.check_config(config)
    changes = config_history.check_run_dir(config, run_dir, allow_changes)
    strategy = strategy or make_strategy(config.trainer.strategy)
    checks.check_replicas(config, method, strategy.num_replicas_in_sync)
    chosen = precision.choose(config.trainer.mixed_precision)
    if chosen.warning:
        print(chosen.warning, file=sys.stderr, flush=True)
    elif config.trainer.mixed_precision and verbose:
        print(f"--trainer.mixed_precision: {chosen.policy} ({chosen.reason}).")
    saved = checkpoints.list_checkpoints(run_dir)
    with strategy.scope():
        model = _build(config, family, method)
    return PreparedRun(
        config, run_dir, family, method, strategy, model, changes, saved[-1][0] if saved else 0
    )


def check_step(prepared: PreparedRun) -> None:
    """The first step's terms traced on the stream's batch spec, nothing read or updated: what
    the first step checks (a loss that is not a float32 scalar), checked before training."""
    model = prepared.model
    spec = make_family_dataset(prepared.family, prepared.config, prepared.start_step).element_spec

    def terms(batch):
        earlier: dict = {}
        for update in model.updates():
            computed = update.terms(batch, model.optimizer.iterations, True, earlier)
            model.check_terms(computed, update.loss)
            earlier.update(computed)
        return earlier

    with prepared.strategy.scope(), registry.untraced():
        tf.function(terms).get_concrete_function(spec)


def train(
    config: ExperimentConfig,
    run_dir: str,
    callbacks: Sequence[keras.callbacks.Callback] = (),
    verbose: int = 2,
    strategy: tf.distribute.Strategy | None = None,
    allow_changes: Sequence[str] = (),
) -> TrainResult:
    """Trains ``config`` into ``run_dir``, resuming from its checkpoint when one is there."""
    return train_prepared(prepare(config, run_dir, strategy, allow_changes, verbose), callbacks, verbose)


def train_prepared(
    prepared: PreparedRun, callbacks: Sequence[keras.callbacks.Callback] = (), verbose: int = 2
) -> TrainResult:
    """Trains the run :func:`prepare` checked.

    Builds its data stream, then, holding the run's lock, writes its config, restores, fits and exports.
    """
    config, strategy = prepared.config, prepared.strategy
    dataset = make_family_dataset(prepared.family, config, prepared.start_step)
    # Only the chief of a multi-worker run writes run_dir (and locks it: one writer per run
    # directory); the other workers compute the same values and keep their logs and exports
    # apart. Written once the data and the model are known to work, so a bad flag leaves no
    # config.json to contradict its correction.
    chief = checkpoints.is_chief(strategy)
    with run_lock.RunLock(prepared.run_dir) if chief else contextlib.nullcontext():
        return _train_locked(
            config,
            prepared.run_dir,
            prepared.family,
            prepared.method,
            prepared.model,
            dataset,
            strategy,
            chief,
            prepared.changes,
            prepared.start_step,
            callbacks,
            verbose,
        )


def _constant_rate(optimizer: keras.optimizers.Optimizer):
    """The variable holding ``optimizer``'s learning rate; None for a schedule."""
    optimizer = getattr(
        optimizer, "inner_optimizer", optimizer
    )  # a LossScaleOptimizer's own rate is its inner one's
    rate = optimizer._learning_rate  # noqa: SLF001 - Keras keeps no public handle on the variable
    return (
        None if isinstance(rate, keras.optimizers.schedules.LearningRateSchedule) or callable(rate) else rate
    )


def _train_locked(
    config: ExperimentConfig,
    run_dir: str,
    family: DataFamily,
    method: Method,
    model: MethodModel,
    dataset: tf.data.Dataset,
    strategy: tf.distribute.Strategy,
    chief: bool,
    changes: dict,
    start_step: int,
    callbacks: Sequence[keras.callbacks.Callback],
    verbose: int,
) -> TrainResult:
    """What :func:`train` does once ``run_dir`` is checked and locked: config, restore, fit, export."""
    output_dir = run_dir if chief else os.path.join(run_dir, "workers", _task_name(strategy))
    os.makedirs(output_dir, exist_ok=True)
    if chief:
        config_history.write_config(config, run_dir, changes, start_step)
    with strategy.scope():
        # A constant learning rate is an optimizer variable, restored with the checkpoint; the
        # configured value, which the freshly built optimizers hold, wins (it differs after
        # --allow_config_change=learning_rate). Every optimizer's: a method's second optimizer
        # may have a rate of its own.
        configured = [
            (variable, variable.numpy())
            for variable in map(_constant_rate, model.optimizers())
            if variable is not None
        ]
        restored_step = checkpoints.restore(model, run_dir)
        for variable, rate in configured:
            variable.assign(rate)
    if restored_step != start_step:  # the newest checkpoint was unreadable; an older one was loaded
        start_step = restored_step
        dataset = make_family_dataset(family, config, start_step)
    if start_step:
        changed = f" with {', '.join(sorted(changes))} changed" if changes else ""
        print(
            f"Resuming {run_dir} from its checkpoint at step {start_step} of {config.trainer.steps}{changed}."
        )
    elif verbose:  # the first log line comes only after --trainer.log_every steps
        print(
            f"Training {config.name} (--method={config.method.name} on --data={config.data.family}, "
            f"{checks.data_description(config, family)}) into {run_dir}: {config.trainer.steps} steps, "
            f"a line and a checkpoint every {config.trainer.log_every}.",
            flush=True,
        )
    if is_multi_worker(strategy):
        # The pipelines draw their sets from seeds, not files: every worker builds the same
        # batches and keeps its own share of each.
        options = tf.data.Options()
        options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.DATA
        dataset = dataset.with_options(options)
    # A Keras epoch ends on every log step, the last step and the resume step; Keras runs whole
    # executions, so steps_per_execution must divide the epoch (else it trains past the end).
    epoch = steps_per_log(config, start_step)
    model.steps_per_execution = steps_per_execution(config, start_step)  # read when fit traces the step
    if config.trainer.steps_per_execution and model.steps_per_execution != config.trainer.steps_per_execution:
        resumed = f", resuming from step {start_step}" if epoch != steps_per_log(config) else ""
        warnings.warn(
            f"--trainer.steps_per_execution={config.trainer.steps_per_execution} "
            f"does not divide the {epoch} steps between log steps "
            f"(--trainer.log_every={config.trainer.log_every}, "
            f"--trainer.steps={config.trainer.steps}{resumed}); "
            f"running {model.steps_per_execution} step(s) per execution instead."
        )
    logger = IntervalLogger(
        os.path.join(output_dir, "logs", "train"), config.trainer.log_every, config.trainer.steps, verbose
    )
    calls = (config.trainer.steps - start_step) // model.steps_per_execution
    choose = compile_choice.should_choose(config.trainer.jit_compile, config.trainer.strategy, calls)
    all_callbacks = [
        # First, so that its clock stops before the other callbacks' work on each call.
        *([compile_choice.ChooseCompile(calls, verbose=bool(verbose))] if choose else []),
        StopOnNonFiniteLoss(run_dir),
        checkpoints.SaveCheckpoint(
            run_dir,
            config.trainer.keep_checkpoints,
            config.trainer.log_every,
            config.trainer.steps,
            write=chief,
        ),
        # Family callbacks (pose: the titration logger) add to the logs before they are written.
        *family.training_callbacks(config),
        # The method's own logs (PMP: usage histograms, image grids), under output_dir/logs.
        *method.training_callbacks(config, os.path.join(output_dir, "logs")),
        logger,
        HParamsLogger(
            config, os.path.join(output_dir, "logs")
        ),  # the config on TensorBoard's HParams dashboard
        *callbacks,
    ]
    # SIGTERM and Ctrl-C stop the run at the end of a step, with a checkpoint of it
    # (preemption.RunPreempted); last, so that every other callback has seen that step.
    stopper = preemption.StopOnSignal(
        run_dir,
        config.trainer.keep_checkpoints,
        config.trainer.log_every,
        config.trainer.steps,
        write=chief,
        strategy=strategy if is_multi_worker(strategy) else None,
    )
    with stopper:
        model.fit(
            dataset,
            epochs=config.trainer.steps // epoch,
            steps_per_epoch=epoch,
            initial_epoch=start_step // epoch,
            callbacks=[*all_callbacks, stopper],
            verbose=0,
            shuffle=False,  # the pipelines draw random sets themselves
        )
    networks = model.networks()
    for name, network in networks.items():
        network.save(network_file(output_dir, name))
    export.export_run(config, networks, os.path.join(output_dir, SAVED_MODEL_DIR))
    return TrainResult(
        networks=networks,
        history=logger.history,
        run_dir=run_dir,
        final_step=int(model.optimizer.iterations.numpy()),
        precision=precision_policy(config),
    )
